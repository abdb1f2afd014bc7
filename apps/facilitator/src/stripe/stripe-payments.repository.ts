import { Injectable } from '@nestjs/common';
import { PrismaService } from '@mp/db';
import { applyTransition } from '../settlement/payment-transitions';

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
 * Queries and transitions of payments settled through Stripe (rail `stripe`) that the chain-payment repository has
 * no use for: the sweep's work list, and a confirmation that may correct an earlier failure. Like every transition,
 * it is a compare-and-set on the state written with its outbox event in one statement (payment-transitions.ts).
 */
@Injectable()
export class StripePayments {
  constructor(private readonly db: PrismaService) {}

  /**
   * Stripe payments whose outcome is still unknown (`verified` for longer than `idleMs`), then failed ones whose
   * PaymentIntent may still succeed, each group oldest first, at most `limit` in all.
   */
  async toResolve(idleMs: number, limit: number): Promise<StripePaymentToResolve[]> {
    const rows = await this.db.$queryRawUnsafe<(Omit<StripePaymentToResolve, 'validBefore'> & { validBefore: string })[]>(
      `SELECT id, state::text AS state, challenge_id AS "challengeId", reference, created_at AS "createdAt",
              valid_before::text AS "validBefore", (extract(epoch FROM now() - updated_at) * 1000)::float8 AS "idleMs"
         FROM facilitator.payments
        WHERE rail = 'stripe' AND challenge_id IS NOT NULL
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
