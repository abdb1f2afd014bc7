import { z } from 'zod';

/**
 * What the ledger (which owns the subscription lifecycle) asks the facilitator (which owns the instruments and the
 * rails) to do about a subscription (issue 13). Each command is a BullMQ job on this queue, under the deployment's
 * QUEUE_PREFIX, with job id `subscriptionCommandJobId(command)`. Delivery is at least once: the facilitator carries out
 * each (subscription, period, attempt) charge and each cancel once, however often it is published, and reports every
 * outcome through its outbox (PAYMENT_EVENTS_QUEUE): a charge's payment events carry `payment.subscription`, a charge
 * it did not attempt is `subscription.charge_refused`, a cancel done is `subscription.canceled`, a refund done or failed is `payment.refunded` / `payment.refund_failed` on the
 * refunded charge's payment.
 */
export const SUBSCRIPTION_COMMANDS_QUEUE = 'subscription-commands';

const subscriptionId = z.string().regex(/^[A-Za-z0-9_-]{16,64}$/, 'expected a base64url subscription id');
const isoTime = z.iso.datetime({ offset: true });
const base = {
  /** unique per command, what the outcome event echoes */
  commandId: z.string().min(1).max(200),
  subscriptionId,
  merchantId: z.uuid(),
  requestedAt: isoTime,
};

export const subscriptionCommandSchema = z.discriminatedUnion('type', [
  /**
   * Charge period `periodIndex` (attempt 0 is the renewal, 1… the dunning retries). The facilitator charges at most
   * one (subscription, period, attempt), never a period already paid, and only inside [periodStart, periodEnd).
   */
  z.strictObject({
    type: z.literal('charge'),
    ...base,
    periodIndex: z.number().int().nonnegative(),
    attempt: z.number().int().nonnegative(),
    periodStart: isoTime,
    periodEnd: isoTime,
  }),
  /**
   * Stop renewing: at the end of the paid period (Stripe `cancel_at_period_end`) or now (Stripe `DELETE`, stored
   * authorizations destroyed). `effectiveAt` is when the ledger ends the subscription.
   */
  z.strictObject({
    type: z.literal('cancel'),
    ...base,
    at: z.enum(['period_end', 'immediately']),
    effectiveAt: isoTime,
  }),
  /**
   * Refund `amount` of period `periodIndex`'s charge (the unused part after an immediate cancel) to the payer, from
   * the merchant's refund wallet or through Stripe. The facilitator refunds once per command id (its refund's
   * idempotency key) and answers with `payment.refunded` / `payment.refund_failed` on the refunded payment; a refund
   * it denies (no refund wallet, nothing left to refund) is logged and has no event.
   */
  z.strictObject({
    type: z.literal('refund'),
    ...base,
    periodIndex: z.number().int().nonnegative(),
    /** atomic units of the charge's asset */
    amount: z.string().regex(/^[1-9][0-9]{0,77}$/, 'expected a positive decimal string of atomic units'),
    reason: z.string().min(1).max(200),
  }),
]);
export type SubscriptionCommand = z.infer<typeof subscriptionCommandSchema>;

/** One job per command id: a re-publish of the same command is dropped by BullMQ while it keeps the job. */
export function subscriptionCommandJobId(command: Pick<SubscriptionCommand, 'commandId'>): string {
  return `subscription-command-${command.commandId}`;
}

/** The command id of a charge: the same (subscription, period, attempt) is the same command. */
export function chargeCommandId(subscriptionId: string, periodIndex: number, attempt: number): string {
  return `charge-${subscriptionId}-${periodIndex}-${attempt}`;
}

/** The command id of a refund: one refund per (subscription, period), however often it is published. */
export function refundCommandId(subscriptionId: string, periodIndex: number): string {
  return `refund-${subscriptionId}-${periodIndex}`;
}
