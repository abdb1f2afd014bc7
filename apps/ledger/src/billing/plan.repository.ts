import { Injectable } from '@nestjs/common';
import type { PeriodUnit } from '@mp/billing';
import { fromDbDecimal, Prisma, PrismaService, toDbDecimal } from '@mp/db';
import { canonicalDecimal, type CancelRefund, type DunningOutcome, type PlanInput, type PlanRecord } from './plan';

/** What creating a plan did: created it, found its id taken (a retry, or not), or found an open plan of its product and name. */
export type CreatePlanOutcome = { created: boolean; plan: PlanRecord } | { created: false; plan?: undefined; namedAlike: PlanRecord };

export interface PlanFilter {
  product?: string;
  archived?: boolean;
}

const PLAN = {
  id: true,
  name: true,
  product: true,
  amount: true,
  asset: true,
  periodUnit: true,
  periodCount: true,
  trialDays: true,
  endsAt: true,
  onDunningExhausted: true,
  cancelRefund: true,
  archivedAt: true,
  createdAt: true,
  usageComponents: { orderBy: { position: 'asc' }, select: { key: true, meterKey: true, unitAmount: true, description: true } },
} satisfies Prisma.PlanSelect;

type PlanRow = Prisma.PlanGetPayload<{ select: typeof PLAN }>;

/** Creating a plan races another plan of its name being archived: a few tries settle it. */
const CREATE_TRIES = 3;

/** Plans in `ledger.plans`, always scoped by their merchant: another merchant's plan is as absent as one that does not exist. */
@Injectable()
export class PlanRepository {
  constructor(private readonly db: PrismaService) {}

  /**
   * Inserts the plan unless its id, or its product and name among the merchant's open plans, is taken: PostgreSQL
   * decides (ON CONFLICT DO NOTHING covers the key and the partial unique index plans_open_name_key, so concurrent
   * retries insert once), and which one it was is read after. The usage components are written in the same
   * transaction, only by the insert that created the plan.
   */
  async create(merchantId: string, plan: PlanInput): Promise<CreatePlanOutcome> {
    for (let attempt = 1; attempt <= CREATE_TRIES; attempt++) {
      const count = await this.db.$transaction(async (tx) => {
        const { count } = await tx.plan.createMany({
          data: {
            merchantId,
            id: plan.id,
            name: plan.name,
            product: plan.product,
            amount: toDbDecimal(plan.amount),
            asset: plan.asset,
            periodUnit: plan.periodUnit,
            periodCount: plan.periodCount,
            trialDays: plan.trialDays,
            endsAt: plan.endsAt,
            onDunningExhausted: plan.onDunningExhausted,
            cancelRefund: plan.cancelRefund,
          },
          skipDuplicates: true,
        });
        if (count === 1 && plan.usage.length)
          await tx.planUsageComponent.createMany({
            data: plan.usage.map((c, position) => ({
              merchantId,
              planId: plan.id,
              key: c.key,
              meterKey: c.meterKey,
              unitAmount: c.unitAmount,
              description: c.description,
              position,
            })),
          });
        return count;
      });
      const stored = await this.find(merchantId, plan.id);
      if (stored) return { created: count === 1, plan: stored };
      const namedAlike = await this.db.plan.findFirst({
        where: { merchantId, product: plan.product, name: plan.name, archivedAt: null },
        select: PLAN,
      });
      if (namedAlike) return { created: false, namedAlike: toRecord(namedAlike) };
      // the plan in the way was archived meanwhile: its name is free again
    }
    throw new Error(`plan ${plan.id} was neither inserted nor found in the way after ${CREATE_TRIES} tries`);
  }

  async find(merchantId: string, id: string): Promise<PlanRecord | undefined> {
    const row = await this.db.plan.findUnique({ where: { merchantId_id: { merchantId, id } }, select: PLAN });
    return row ? toRecord(row) : undefined;
  }

  /** A page of the merchant's plans, newest first, after the plan at `afterSeq` (exclusive). */
  async list(merchantId: string, filter: PlanFilter, limit: number, afterSeq?: string): Promise<{ plans: PlanRecord[]; next?: string }> {
    const rows = await this.db.plan.findMany({
      where: {
        merchantId,
        ...(filter.product !== undefined && { product: filter.product }),
        ...(filter.archived !== undefined && { archivedAt: filter.archived ? { not: null } : null }),
        ...(afterSeq !== undefined && { seq: { lt: BigInt(afterSeq) } }),
      },
      orderBy: { seq: 'desc' },
      take: limit + 1,
      select: { ...PLAN, seq: true },
    });
    const page = rows.slice(0, limit);
    const last = page.at(-1);
    return {
      plans: page.map(({ seq: _, ...row }) => toRecord(row)),
      ...(rows.length > limit && last && { next: last.seq.toString() }),
    };
  }

  /** Archives the plan (once: archiving again keeps the first time); undefined if the merchant has no such plan. */
  async archive(merchantId: string, id: string): Promise<PlanRecord | undefined> {
    await this.db.plan.updateMany({ where: { merchantId, id, archivedAt: null }, data: { archivedAt: new Date() } });
    return this.find(merchantId, id);
  }
}

function toRecord({ usageComponents, ...row }: PlanRow): PlanRecord {
  return {
    ...row,
    // toFixed: never an exponent, whatever the size
    usage: usageComponents.map((c) => ({ ...c, unitAmount: canonicalDecimal(c.unitAmount.toFixed()) })),
    amount: fromDbDecimal(row.amount),
    periodUnit: row.periodUnit as PeriodUnit,
    onDunningExhausted: row.onDunningExhausted as DunningOutcome,
    cancelRefund: row.cancelRefund as CancelRefund,
  };
}
