import { createHash } from 'node:crypto';
import { z } from 'zod';

/**
 * What the ledger (which owns the subscription lifecycle) asks the facilitator (which owns the instruments and the
 * rails) to do about a subscription (issue 13). A command is a BullMQ job on this queue, under the deployment's
 * QUEUE_PREFIX, with job id `subscriptionCommandJobId(command)`; or, for charges, up to MAX_CHARGES_PER_JOB of them
 * travel in one `charge-batch` job (ChargeBatch, job id `chargeBatchJobId(commands)`), which the facilitator answers
 * command by command: a charge of a batch it must try again becomes a job of its own, under its own job id. Delivery
 * is at least once: the facilitator carries out
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

/**
 * Charge period `periodIndex` (attempt 0 is the renewal, 1… the dunning retries). The facilitator charges at most
 * one (subscription, period, attempt), never a period already paid, and only inside [periodStart, periodEnd).
 */
export const chargeCommandSchema = z.strictObject({
  type: z.literal('charge'),
  ...base,
  periodIndex: z.number().int().nonnegative(),
  attempt: z.number().int().nonnegative(),
  periodStart: isoTime,
  periodEnd: isoTime,
});
export type ChargeCommand = z.infer<typeof chargeCommandSchema>;

export const subscriptionCommandSchema = z.discriminatedUnion('type', [
  chargeCommandSchema,
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

/** The name of a job carrying a ChargeBatch (a single command's job is named by its `type`). */
export const CHARGE_BATCH_JOB_NAME = 'charge-batch';
/** Most charges one job carries: the renewals due at once cost a few Redis round trips per hundred, not per charge. */
export const MAX_CHARGES_PER_JOB = 100;

/**
 * Charges that travel in one job (renewals come due together). Each is carried out as if it were a job of its own:
 * once per (subscription, period, attempt), with its own outcome event; cancels and refunds always travel alone.
 */
export const chargeBatchSchema = z.strictObject({ commands: z.array(chargeCommandSchema).min(1).max(MAX_CHARGES_PER_JOB) });
export type ChargeBatch = z.infer<typeof chargeBatchSchema>;

/** What a `subscription-commands` job carries: one command, or a batch of charges. */
export type SubscriptionCommandJobData = SubscriptionCommand | ChargeBatch;

/**
 * A job's data as one command or a batch (told apart by `commands`), with the issues that break the contract. A
 * malformed job cannot be fixed by retrying: its consumer fails it for good.
 */
export function parseSubscriptionCommandJob(data: unknown): z.ZodSafeParseResult<SubscriptionCommandJobData> {
  const batch = typeof data === 'object' && data !== null && 'commands' in data;
  return batch ? chargeBatchSchema.safeParse(data) : subscriptionCommandSchema.safeParse(data);
}

/** True when the job's data is a batch of charges. */
export function isChargeBatch(data: SubscriptionCommandJobData): data is ChargeBatch {
  return 'commands' in data;
}

/**
 * A batch's job id, from its command ids: the same batch published again is dropped by BullMQ while it keeps the job
 * (a batch carried out twice would change nothing either: each command is done once).
 */
export function chargeBatchJobId(commands: readonly Pick<SubscriptionCommand, 'commandId'>[]): string {
  const digest = createHash('sha256')
    .update(commands.map((c) => c.commandId).join('\n'))
    .digest('hex');
  return `subscription-charges-${digest.slice(0, 40)}`;
}

/** Splits a list into the batches of at most `size` items that travel in one job each. */
export function inBatches<T>(items: readonly T[], size: number): T[][] {
  const batches: T[][] = [];
  for (let i = 0; i < items.length; i += size) batches.push(items.slice(i, i + size));
  return batches;
}

/** The command id of a charge: the same (subscription, period, attempt) is the same command. */
export function chargeCommandId(subscriptionId: string, periodIndex: number, attempt: number): string {
  return `charge-${subscriptionId}-${periodIndex}-${attempt}`;
}

/** The command id of a refund: one refund per (subscription, period), however often it is published. */
export function refundCommandId(subscriptionId: string, periodIndex: number): string {
  return `refund-${subscriptionId}-${periodIndex}`;
}
