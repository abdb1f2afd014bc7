import { Injectable } from '@nestjs/common';
import type { PaymentEventData, PaymentEventType } from '@mp/clients';
import { fromDbDecimal, isUniqueViolation, PrismaService, toDbDecimal, withTransaction, type Tx } from '@mp/db';
import { ChainPayments, type NewPayment } from '../settlement/chain-payments.repository';
import { eventTraceContext } from '../settlement/payment-transitions';

export type SubscriptionState = 'active' | 'canceled' | 'revoked';
export type ChargeRefusal = PaymentEventData<'subscription.charge_refused'>['reason'];
export type Revocation = PaymentEventData<'subscription.revoked'>['reason'];

/** What a subscription is from its activation on, and never changes: whose, which grant, what it pays how often. */
interface SubscriptionTerms {
  id: string;
  scope: string;
  merchantId: string | null;
  challengeId: string;
  method: string;
  network: string;
  asset: string;
  payer: string;
  payTo: string;
  amount: bigint;
  periodCount: number;
  anchor: Date;
  expiresAt: Date | null;
  externalId: string | null;
}

/** A subscription as the commands and the watcher need it. */
export interface SubscriptionRecord extends SubscriptionTerms {
  periodUnit: 'day' | 'week' | 'month';
  firstPaymentId: string;
  state: SubscriptionState;
  cancelAt: Date | null;
  cancelCommandId: string | null;
}

/** One period's stored authorization: the signature sealed, the rest as signed. */
export interface StoredAuthorization {
  periodIndex: number;
  nonce: string;
  validAfter: bigint;
  validBefore: bigint;
  sealed: Buffer | null;
  keyId: string | null;
}

export interface NewSubscription extends SubscriptionTerms {
  periodUnit: string;
  authorizedPeriods: number | null;
  planId: string | null;
}

export interface ChargeCommandKey {
  subscriptionId: string;
  periodIndex: number;
  attempt: number;
  commandId: string;
}

/** The columns of a SubscriptionRecord (`toRecord`); other repositories join it into their own reads. */
export const SUBSCRIPTION_SELECT = {
  id: true,
  scope: true,
  merchantId: true,
  challengeId: true,
  method: true,
  network: true,
  asset: true,
  payer: true,
  payTo: true,
  amount: true,
  periodUnit: true,
  periodCount: true,
  anchor: true,
  expiresAt: true,
  firstPaymentId: true,
  externalId: true,
  state: true,
  cancelAt: true,
  cancelCommandId: true,
} as const;

/**
 * The facilitator's subscriptions (issue 13): the grant a verified credential gave, its sealed authorizations, each
 * charge the ledger asked for (once), and the subscription's own outbox events, written on its period 0 payment in the
 * same transaction as the change they report. Every change of one subscription locks its row first, so a charge, a
 * cancel and a revocation of it never interleave.
 */
@Injectable()
export class Subscriptions {
  constructor(
    private readonly db: PrismaService,
    private readonly payments: ChainPayments,
  ) {}

  async findByChallenge(scope: string, challengeId: string): Promise<SubscriptionRecord | undefined> {
    const row = await this.db.subscription.findUnique({ where: { scope_challengeId: { scope, challengeId } }, select: SUBSCRIPTION_SELECT });
    return row ? toRecord(row) : undefined;
  }

  async find(id: string): Promise<SubscriptionRecord | undefined> {
    const row = await this.db.subscription.findUnique({ where: { id }, select: SUBSCRIPTION_SELECT });
    return row ? toRecord(row) : undefined;
  }

  async authorization(
    subscriptionId: string,
    periodIndex: number,
    db: Pick<PrismaService, 'subscriptionAuthorization'> = this.db,
  ): Promise<StoredAuthorization | undefined> {
    const row = await db.subscriptionAuthorization.findUnique({ where: { subscriptionId_periodIndex: { subscriptionId, periodIndex } } });
    return row
      ? {
          periodIndex: row.periodIndex,
          nonce: row.nonce,
          validAfter: fromDbDecimal(row.validAfter),
          validBefore: fromDbDecimal(row.validBefore),
          sealed: row.sealed ? Buffer.from(row.sealed) : null,
          keyId: row.keyId,
        }
      : undefined;
  }

  /**
   * Activation, in one transaction: the period 0 payment (with subscription.activated before its payment.verified),
   * the subscription and its sealed authorizations. Undefined when the credential was activated already (its
   * challenge, or its period 0 authorization, is known): the caller follows the existing one.
   */
  activate(
    subscription: NewSubscription,
    authorizations: (Omit<StoredAuthorization, 'sealed' | 'keyId'> & { sealed: Buffer; keyId: string })[],
    payment: NewPayment,
  ): Promise<{ paymentId: string } | undefined> {
    return this.activateWith(subscription, payment, async (tx) => {
      await tx.subscriptionAuthorization.createMany({
        data: authorizations.map((a) => ({
          subscriptionId: subscription.id,
          periodIndex: a.periodIndex,
          nonce: a.nonce,
          validAfter: toDbDecimal(a.validAfter),
          validBefore: toDbDecimal(a.validBefore),
          sealed: new Uint8Array(a.sealed),
          keyId: a.keyId,
        })),
      });
    });
  }

  /**
   * The activation every rail shares, in one transaction: the period 0 payment, the subscription, then the rail's own
   * rows (`more`). Undefined when the credential was activated already (a unique key of any of them).
   */
  async activateWith(
    subscription: NewSubscription,
    payment: NewPayment,
    more: (tx: Tx, paymentId: string) => Promise<void>,
  ): Promise<{ paymentId: string } | undefined> {
    try {
      return await withTransaction(this.db, async (tx) => {
        const paymentId = await this.payments.claimWithin(tx, payment);
        if (!paymentId) return undefined;
        await tx.subscription.create({ data: { ...subscription, amount: toDbDecimal(subscription.amount), firstPaymentId: paymentId } });
        await more(tx, paymentId);
        return { paymentId };
      });
    } catch (error) {
      if (isUniqueViolation(error)) return undefined;
      throw error;
    }
  }

  /** Whether this (subscription, period, attempt) was already carried out or refused (its command is done). */
  async chargeDone(key: ChargeCommandKey): Promise<boolean> {
    const row = await this.db.subscriptionCharge.findFirst({
      where: { OR: [{ commandId: key.commandId }, { subscriptionId: key.subscriptionId, periodIndex: key.periodIndex, attempt: key.attempt }] },
      select: { commandId: true },
    });
    return row !== null;
  }

  /** A payment of ours that pays (or is paying) this period: verified, submitted or confirmed. */
  async periodPaidOrInFlight(subscriptionId: string, periodIndex: number, db: Pick<PrismaService, 'payment'> = this.db): Promise<boolean> {
    const row = await db.payment.findFirst({
      where: { subscriptionId, subscriptionPeriod: periodIndex, state: { in: ['verified', 'submitted', 'confirmed'] } },
      select: { id: true },
    });
    return row !== null;
  }

  /** The confirmed payment that paid period N, what a refund of that period refunds. */
  async paidCharge(subscriptionId: string, periodIndex: number): Promise<{ id: string; network: string; txHash: string | null } | undefined> {
    const row = await this.db.payment.findFirst({
      where: { subscriptionId, subscriptionPeriod: periodIndex, state: 'confirmed' },
      select: { id: true, network: true, txHash: true },
    });
    return row ?? undefined;
  }

  /**
   * A charge the ledger asked for that is not attempted: its row and its subscription.charge_refused event, once
   * (a second refusal of the same command writes nothing).
   */
  refuse(subscription: SubscriptionRecord, key: ChargeCommandKey, reason: ChargeRefusal, message: string): Promise<boolean> {
    return withTransaction(this.db, (tx) => this.refuseWithin(tx, subscription, key, reason, message));
  }

  /**
   * A charge, in one transaction: the subscription locked, the command not done yet, the refusal rules checked again
   * under the lock (`recheck`: a cancel or revocation may have landed meanwhile), then the payment and the charge row.
   * Answers the payment id, the refusal written, or `done` when the command was carried out by someone else.
   */
  async charge(
    subscriptionId: string,
    key: ChargeCommandKey,
    recheck: (locked: SubscriptionRecord, tx: Tx) => Promise<{ reason: ChargeRefusal; message: string } | undefined>,
    payment: NewPayment,
  ): Promise<{ kind: 'charged'; paymentId: string } | { kind: 'refused'; reason: ChargeRefusal } | { kind: 'done' }> {
    try {
      return await withTransaction(this.db, async (tx) => {
        const locked = await this.lock(tx, subscriptionId);
        if (!locked) return { kind: 'done' as const };
        const done = await tx.subscriptionCharge.findFirst({
          where: { OR: [{ commandId: key.commandId }, { subscriptionId, periodIndex: key.periodIndex, attempt: key.attempt }] },
          select: { commandId: true },
        });
        if (done) return { kind: 'done' as const };
        const refusal = await recheck(locked, tx);
        if (refusal) {
          await this.refuseWithin(tx, locked, key, refusal.reason, refusal.message);
          return { kind: 'refused' as const, reason: refusal.reason };
        }
        const paymentId = await this.payments.claimWithin(tx, payment);
        if (!paymentId) {
          // the period's authorization has a payment already (an earlier attempt): one row per authorization
          const earlier = await tx.payment.findUnique({
            where: {
              network_asset_payer_authorizationNonce: {
                network: payment.network,
                asset: payment.asset,
                payer: payment.payer,
                authorizationNonce: payment.nonce,
              },
            },
            select: { id: true, state: true, errorReason: true },
          });
          const paid = earlier === null || ['verified', 'submitted', 'confirmed'].includes(earlier.state);
          const refusal: ChargeRefusal = paid ? 'already_paid' : 'rail_error';
          const message = paid
            ? `period ${key.periodIndex}'s authorization already has a payment`
            : `period ${key.periodIndex}'s authorization has a ${earlier.state} payment (${earlier.id}, ${earlier.errorReason ?? 'no reason'}), which this profile does not send again`;
          await this.refuseWithin(tx, locked, key, refusal, message);
          return { kind: 'refused' as const, reason: refusal };
        }
        await tx.subscriptionCharge.create({
          data: { subscriptionId, periodIndex: key.periodIndex, attempt: key.attempt, commandId: key.commandId, outcome: 'charged', paymentId },
        });
        return { kind: 'charged' as const, paymentId };
      });
    } catch (error) {
      // two workers raced on the same command: the loser's transaction is rolled back, the winner's outcome stands
      if (isUniqueViolation(error)) return { kind: 'done' };
      throw error;
    }
  }

  /**
   * Carries out a cancel: at period end, the authorizations of periods starting at or after `effectiveAt` destroyed
   * and later periods refused; immediately, every authorization destroyed and the subscription canceled. Once per
   * command id; false when this command was carried out already.
   */
  cancel(subscriptionId: string, command: { commandId: string; at: 'period_end' | 'immediately'; effectiveAt: Date }, now: Date): Promise<boolean> {
    return withTransaction(this.db, async (tx) => {
      const locked = await this.lock(tx, subscriptionId);
      if (!locked || locked.cancelCommandId === command.commandId) return false;
      const immediate = command.at === 'immediately';
      await tx.subscription.update({
        where: { id: subscriptionId },
        data: {
          cancelAt: command.effectiveAt,
          cancelCommandId: command.commandId,
          updatedAt: now,
          ...(immediate && locked.state === 'active' && { state: 'canceled', canceledAt: now }),
        },
      });
      // a period starting at effectiveAt has validAfter = effectiveAt − 1 (seconds)
      const firstGone = BigInt(Math.ceil(command.effectiveAt.getTime() / 1000)) - 1n;
      await tx.subscriptionAuthorization.updateMany({
        where: { subscriptionId, destroyedAt: null, ...(!immediate && { validAfter: { gte: toDbDecimal(firstGone) } }) },
        data: { sealed: null, keyId: null, destroyedAt: now },
      });
      await this.event(tx, locked.firstPaymentId, 'subscription.canceled', {
        subscriptionId,
        commandId: command.commandId,
        at: command.at,
        effectiveAt: command.effectiveAt.toISOString(),
      });
      return true;
    });
  }

  /**
   * The payer withdrew the grant on chain: revoked once (every authorization destroyed, subscription.revoked), later
   * calls change nothing. False when it was revoked already.
   */
  revoke(subscriptionId: string, revocation: { reason: Revocation; message: string; at: Date; nonce?: string; txHash?: string }, now: Date): Promise<boolean> {
    return withTransaction(this.db, (tx) => this.revokeWithin(tx, subscriptionId, revocation, now));
  }

  /** The live subscriptions of a network whose payer and nonce match an AuthorizationCanceled log. */
  async matchCanceled(network: string, canceled: { authorizer: string; nonce: string }[]): Promise<{ subscriptionId: string; nonce: string; payer: string }[]> {
    if (canceled.length === 0) return [];
    const rows = await this.db.subscriptionAuthorization.findMany({
      where: {
        nonce: { in: canceled.map((c) => c.nonce.toLowerCase()) },
        // a canceled subscription's authorizations are destroyed already: nothing left to withdraw
        subscription: { network, state: 'active' },
      },
      select: { subscriptionId: true, nonce: true, subscription: { select: { payer: true } } },
    });
    const wanted = new Set(canceled.map((c) => `${c.authorizer.toLowerCase()}|${c.nonce.toLowerCase()}`));
    return rows
      .filter((r) => wanted.has(`${r.subscription.payer}|${r.nonce}`))
      .map((r) => ({ subscriptionId: r.subscriptionId, nonce: r.nonce, payer: r.subscription.payer }));
  }

  /** The tokens of a network that live subscriptions are paid in: what the revocation watcher reads logs of. */
  async liveAssets(network: string): Promise<string[]> {
    const rows = await this.db.subscription.findMany({ where: { network, state: 'active' }, distinct: ['asset'], select: { asset: true } });
    return rows.map((r) => r.asset);
  }

  async cursor(name: string): Promise<bigint | undefined> {
    const row = await this.db.chainCursor.findUnique({ where: { name } });
    return row ? fromDbDecimal(row.block) : undefined;
  }

  async setCursor(name: string, block: bigint): Promise<void> {
    await this.db.chainCursor.upsert({
      where: { name },
      create: { name, block: toDbDecimal(block) },
      update: { block: toDbDecimal(block), updatedAt: new Date() },
    });
  }

  private async refuseWithin(tx: Tx, subscription: SubscriptionRecord, key: ChargeCommandKey, reason: ChargeRefusal, message: string): Promise<boolean> {
    const inserted = await tx.subscriptionCharge.createMany({
      data: [{ subscriptionId: subscription.id, periodIndex: key.periodIndex, attempt: key.attempt, commandId: key.commandId, outcome: 'refused', reason }],
      skipDuplicates: true,
    });
    if (inserted.count === 0) return false;
    await this.event(tx, subscription.firstPaymentId, 'subscription.charge_refused', {
      subscriptionId: subscription.id,
      periodIndex: key.periodIndex,
      attempt: key.attempt,
      commandId: key.commandId,
      reason,
      message,
    });
    return true;
  }

  /** Revocation inside the caller's transaction (a charge that finds the authorization canceled on chain). */
  async revokeWithin(
    tx: Tx,
    subscriptionId: string,
    revocation: { reason: Revocation; message: string; at: Date; nonce?: string; txHash?: string },
    now: Date,
  ): Promise<boolean> {
    const locked = await this.lock(tx, subscriptionId);
    if (!locked || locked.state === 'revoked') return false;
    await tx.subscription.update({
      where: { id: subscriptionId },
      data: { state: 'revoked', revokedAt: revocation.at, revokeReason: revocation.reason, updatedAt: now },
    });
    await tx.subscriptionAuthorization.updateMany({ where: { subscriptionId, destroyedAt: null }, data: { sealed: null, keyId: null, destroyedAt: now } });
    await this.event(tx, locked.firstPaymentId, 'subscription.revoked', {
      subscriptionId,
      reason: revocation.reason,
      message: revocation.message,
      at: revocation.at.toISOString(),
      ...(revocation.nonce && { nonce: revocation.nonce }),
      ...(revocation.txHash && { txHash: revocation.txHash }),
    });
    return true;
  }

  /**
   * The subscription's row, locked for the rest of the transaction. Raw SQL: Prisma Client cannot express
   * SELECT … FOR UPDATE.
   */
  private async lock(tx: Tx, id: string): Promise<SubscriptionRecord | undefined> {
    const locked = await tx.$queryRaw<{ id: string }[]>`SELECT id FROM facilitator.subscriptions WHERE id = ${id} FOR UPDATE`;
    if (locked.length === 0) return undefined;
    const row = await tx.subscription.findUnique({ where: { id }, select: SUBSCRIPTION_SELECT });
    return row ? toRecord(row) : undefined;
  }

  /** One outbox event on the subscription's period 0 payment (the relay checks it against the contract's schema). */
  private async event<T extends PaymentEventType>(tx: Tx, paymentId: string, type: T, data: PaymentEventData<T>): Promise<void> {
    await tx.$executeRaw`
      INSERT INTO facilitator.payment_events (payment_id, type, data, trace_context)
      VALUES (${paymentId}::uuid, ${type}, ${JSON.stringify(data)}::jsonb, ${eventTraceContext()}::jsonb)`;
  }
}

export function toRecord(row: {
  id: string;
  scope: string;
  merchantId: string | null;
  challengeId: string;
  method: string;
  network: string;
  asset: string;
  payer: string;
  payTo: string;
  amount: Parameters<typeof fromDbDecimal>[0];
  periodUnit: string;
  periodCount: number;
  anchor: Date;
  expiresAt: Date | null;
  firstPaymentId: string;
  externalId: string | null;
  state: string;
  cancelAt: Date | null;
  cancelCommandId: string | null;
}): SubscriptionRecord {
  return {
    ...row,
    amount: fromDbDecimal(row.amount),
    periodUnit: row.periodUnit as SubscriptionRecord['periodUnit'],
    state: row.state as SubscriptionState,
  };
}
