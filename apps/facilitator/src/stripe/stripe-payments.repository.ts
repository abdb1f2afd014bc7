import { Injectable } from '@nestjs/common';
import { Prisma, PrismaService, toDbDecimal, withTransaction } from '@mp/db';
import { currentTraceContext } from '@mp/platform';
import { PAYMENT_RECORD, type PaymentRecord } from '../settlement/payment-record';
import { applyTransition } from '../settlement/payment-transitions';

/** A payment settled off chain (a Stripe PaymentIntent): recorded like a chain payment, with the same events. */
export interface NewExternalPayment {
  rail: 'stripe';
  network: string;
  asset: string;
  payer: string;
  challengeId: string;
  payTo: string;
  amount: bigint;
  validBefore: bigint;
  method: string;
  payloadHash: string;
  merchantId: string | null;
}

/** A Stripe payment whose PaymentIntent the sweep asks Stripe about. */
export interface StripePaymentToResolve {
  id: string;
  state: 'verified' | 'failed';
  challengeId: string;
  /** the PaymentIntent already known (a failed payment's), if any */
  reference: string | null;
  createdAt: Date;
  /** the challenge's expiry, unix seconds (0: none) */
  validBefore: bigint;
  /** how long ago the payment last changed, ms, by the database's clock */
  idleMs: number;
}

/**
 * PaymentIntent statuses a payment was marked failed on although Stripe may still complete them (the customer
 * authenticates later, an asynchronous method clears): the sweep asks about these again, and a success corrects them.
 */
export const UNFINISHED_INTENT_STATUSES = ['requires_action', 'processing', 'requires_confirmation', 'requires_capture'];

/** How long after it was marked failed an unfinished PaymentIntent is still asked about. */
const CORRECTABLE_FOR_HOURS = 24;

/**
 * The records of payments settled through Stripe (rail `stripe`): recording one before its PaymentIntent is created,
 * finding it by its challenge, the sweep's work list, and its outcome (a confirmation may correct an earlier failure).
 * Like every transition, an outcome is a compare-and-set on the state written with its outbox event in one statement
 * (payment-transitions.ts).
 */
@Injectable()
export class StripePayments {
  constructor(private readonly db: PrismaService) {}

  /**
   * Records an off-chain payment as verified, with its payment.verified event, before its rail is asked to settle it.
   * Undefined when the challenge already has its payment (the unique authorization key: network, asset, payer, challenge id).
   */
  insertExternal(p: NewExternalPayment): Promise<string | undefined> {
    return withTransaction(this.db, async (tx) => {
      const [inserted] = await tx.payment.createManyAndReturn({
        data: {
          network: p.network,
          asset: p.asset,
          payer: p.payer,
          authorizationNonce: p.challengeId,
          payTo: p.payTo,
          amount: toDbDecimal(p.amount),
          validAfter: toDbDecimal(0n),
          validBefore: toDbDecimal(p.validBefore),
          scheme: p.method,
          payloadHash: p.payloadHash,
          merchantId: p.merchantId,
          protocol: 'mpp',
          rail: p.rail,
          challengeId: p.challengeId,
          state: 'verified',
        },
        skipDuplicates: true,
        select: { id: true },
      });
      if (!inserted) return undefined;
      await tx.paymentEvent.create({
        data: {
          paymentId: inserted.id,
          type: 'payment.verified',
          data: {
            network: p.network,
            asset: p.asset,
            payer: p.payer,
            payTo: p.payTo,
            amount: p.amount.toString(),
            nonce: p.challengeId,
            protocol: 'mpp',
            rail: p.rail,
            method: p.method,
            challengeId: p.challengeId,
          },
          // the trace it is written in (while tracing is on), so the ledger's booking joins the payment's trace
          traceContext: traceContextJson(),
        },
      });
      return inserted.id;
    });
  }

  /** The off-chain payment an MPP challenge created, if any; `merchantId` undefined: whoever's it is (webhooks). */
  async findByChallenge(rail: 'stripe', challengeId: string, merchantId?: string | null): Promise<PaymentRecord | undefined> {
    const row = await this.db.payment.findFirst({
      where: { rail, challengeId, ...(merchantId !== undefined && { merchantId }) },
      select: PAYMENT_RECORD,
    });
    return row ?? undefined;
  }

  /** The off-chain rail refused it: final (a new credential is a new payment). */
  async markFailedExternally(id: string, reason: string, message: string, reference?: string): Promise<boolean> {
    return (await applyTransition(this.db, 'failExternally', id, { reason, message, reference })).moved;
  }

  /**
   * Stripe payments whose outcome is still unknown (`verified` for longer than `idleMs`; a subscription's renewal is
   * not one: its invoice decides, through StripeSubscriptionRail), then failed ones whose
   * PaymentIntent may still succeed, each group oldest first, at most `limit` in all. SQL: ages and idleMs are read on
   * the database's clock, which the transitions write updated_at with.
   */
  async toResolve(idleMs: number, limit: number): Promise<StripePaymentToResolve[]> {
    const rows = await this.db.$queryRawUnsafe<(Omit<StripePaymentToResolve, 'validBefore'> & { validBefore: string })[]>(
      `SELECT id, state::text AS state, challenge_id AS "challengeId", reference, created_at AS "createdAt",
              valid_before::text AS "validBefore", (extract(epoch FROM now() - updated_at) * 1000)::float8 AS "idleMs"
         FROM facilitator.payments
        WHERE rail = 'stripe' AND challenge_id IS NOT NULL AND subscription_id IS NULL
          AND ((state = 'verified' AND updated_at < now() - ($1::int * interval '1 millisecond'))
            OR (state = 'failed' AND reference IS NOT NULL AND error_reason = ANY($3::text[])
                AND updated_at > now() - ($4::int * interval '1 hour')))
        ORDER BY state = 'failed', updated_at LIMIT $2`,
      idleMs,
      limit,
      UNFINISHED_INTENT_STATUSES,
      CORRECTABLE_FOR_HOURS,
    );
    return rows.map((r) => ({ ...r, validBefore: BigInt(r.validBefore) }));
  }

  /**
   * The PaymentIntent succeeded: the payment is confirmed, from `verified` or, correcting an earlier answer, from
   * `failed`. A correction's payment.confirmed event says which event it corrects, so the ledger and the merchant's
   * webhook take the later word. Returns the state it came from, or undefined if it was neither (already confirmed).
   */
  async confirm(id: string, reference: string, details: Record<string, unknown>): Promise<'verified' | 'failed' | undefined> {
    const { was } = await applyTransition(this.db, 'confirmExternally', id, { reference, details });
    return was as 'verified' | 'failed' | undefined;
  }
}

/** The trace the event is written in, as a JSON value (an object literal: Prisma's JSON input type wants one), or SQL NULL. */
function traceContextJson(): Prisma.InputJsonObject | typeof Prisma.DbNull {
  const context = currentTraceContext();
  return context ? { traceparent: context.traceparent, ...(context.tracestate && { tracestate: context.tracestate }) } : Prisma.DbNull;
}
