import { createHash } from 'node:crypto';
import { z } from 'zod';

/**
 * The facilitator's payment events as the ledger consumes them: every row of its transactional outbox
 * (`facilitator.payment_events`) is published as a BullMQ job on this queue, under the deployment's QUEUE_PREFIX.
 * A job carries one event (job name: the event's type, data: a PaymentEventMessage, job id `paymentEventJobId(…)`) or
 * a batch of them (job name PAYMENT_EVENT_BATCH_JOB, data: a PaymentEventBatch, job id `paymentEventBatchJobId(…)`);
 * a consumer takes both. An event the ledger has not acknowledged (PAYMENT_EVENTS_ACKS_QUEUE) is published again, alone.
 * Delivery is at least once, and the same event may come in a batch and alone: consumers key their effects by `eventId`.
 */
export const PAYMENT_EVENTS_QUEUE = 'payment-events';

/**
 * The job id of an event: `event-<eventId>-<paymentId>`. BullMQ drops a job whose id it still holds (a completed one
 * is kept a day), which makes a re-publish of the same event a no-op. The event id alone is not enough for that: it is
 * a database sequence, which starts again in a database restored from a backup or created anew beside the same Redis,
 * and a new event under an old id would be dropped unseen; the payment's id (a random UUID) keeps them apart.
 */
export function paymentEventJobId(eventId: string, paymentId: string): string {
  return `event-${eventId}-${paymentId}`;
}

/**
 * The options every job on PAYMENT_EVENTS_QUEUE is added with (BullMQ job options), whoever adds it: kept a day once
 * consumed, so the same job id added again meanwhile is dropped; retried with backoff after a passing failure; kept
 * once failed for good, for an operator (`npm run ledger:replay`).
 */
export const PAYMENT_EVENT_JOB_OPTIONS = {
  removeOnComplete: { age: 24 * 3600 },
  removeOnFail: false,
  attempts: 20,
  backoff: { type: 'exponential', delay: 500 },
} as const;

/** The name of a job on PAYMENT_EVENTS_QUEUE that carries a PaymentEventBatch (a single event's job is named by its type). */
export const PAYMENT_EVENT_BATCH_JOB = 'batch';

/** Most events in one batch job: what a consumer must be ready to take at once. */
export const MAX_EVENTS_PER_BATCH = 500;

/**
 * The job id of a batch: `payment-events-batch-<first event id>-<last event id>-<count>-<digest>`, the digest (16 hex
 * digits of SHA-256) over every event's id and payment id in order. The same events published again in the same batch (a
 * relay that crashed before marking them published) are the same job, which BullMQ drops while it still holds it; the
 * payment ids keep apart events of a restored database whose ids start again (see paymentEventJobId).
 */
export function paymentEventBatchJobId(events: readonly Pick<PaymentEventMessage, 'eventId' | 'paymentId'>[]): string {
  if (events.length === 0) throw new Error('a payment event batch has at least one event');
  const digest = createHash('sha256');
  for (const { eventId, paymentId } of events) digest.update(`${eventId}/${paymentId.toLowerCase()};`);
  return `payment-events-batch-${events[0].eventId}-${events.at(-1)!.eventId}-${events.length}-${digest.digest('hex').slice(0, 16)}`;
}

/** Atomic units, wei, block numbers: non-negative integers as decimal strings (they outgrow a JS number). */
const decimal = z.string().regex(/^\d+$/, 'expected a decimal string of a non-negative integer');
const hash = z.string().regex(/^0x[0-9a-fA-F]{64}$/, 'expected a 32-byte 0x hex hash');
const address = z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'expected a 0x hex address');
const text = z.string().min(1);
const isoTime = z.iso.datetime({ offset: true });
/** the MPP receipt's `subscriptionId`: base64url without padding, unique per facilitator */
const subscriptionId = z.string().regex(/^[A-Za-z0-9_-]{16,64}$/, 'expected a base64url subscription id');
/** a refund's answer as the x402 refund extension names it */
const refundFields = {
  refundId: z.uuid(),
  /** atomic units of the payment's asset */
  amount: decimal,
  reason: text,
  idempotencyKey: text,
  /** the address or account refunded; null: the payer */
  refundTo: text.nullable(),
};

export const PAYMENT_SNAPSHOT_STATES = ['verified', 'submitted', 'confirmed', 'failed', 'expired'] as const;

/** The payment as it stood when the event was published (amounts in atomic units, decimal strings). */
export const paymentSnapshotSchema = z.strictObject({
  id: z.uuid(),
  state: z.enum(PAYMENT_SNAPSHOT_STATES),
  protocol: z.enum(['x402', 'mpp']),
  rail: z.enum(['evm', 'stripe']),
  /** CAIP-2, or "stripe" */
  network: text,
  /** the token contract as the payment recorded it (not checksummed), or the Stripe currency */
  asset: text,
  payer: text,
  payTo: text,
  amount: decimal,
  /** the EIP-3009 authorization nonce (on Stripe, the MPP challenge id) */
  nonce: text,
  /** the x402 scheme, or the MPP method */
  scheme: text,
  challengeId: text.nullable(),
  /** Stripe: the PaymentIntent */
  reference: text.nullable(),
  txHash: hash.nullable(),
  merchantId: z.uuid().nullable(),
  /** present on a subscription's charges (issue 13): which period this payment pays, and which try it is */
  subscription: z
    .strictObject({
      id: subscriptionId,
      periodIndex: z.number().int().nonnegative(),
      attempt: z.number().int().nonnegative(),
    })
    .optional(),
});
export type PaymentSnapshot = z.infer<typeof paymentSnapshotSchema>;

/**
 * Each event's own data, exactly (strict objects: a key the facilitator writes that is not here fails its relay's
 * check, so the contract cannot drift silently).
 */
export const paymentEventDataSchemas = {
  /** the payment was verified and recorded; the ledger holds its amount */
  'payment.verified': z.strictObject({
    network: text,
    asset: text,
    payer: text,
    payTo: text,
    amount: decimal,
    nonce: text,
    protocol: z.enum(['x402', 'mpp']),
    rail: z.enum(['evm', 'stripe']),
    /** MPP only */
    method: text.optional(),
    challengeId: text.optional(),
  }),
  /** its settlement transaction was signed and is about to be broadcast */
  'payment.submitted': z.strictObject({ txHash: hash, signer: address, txNonce: z.number().int().nonnegative() }),
  /** a fee-bumped replacement (same signer and nonce) of a stuck transaction */
  'payment.replaced': z.strictObject({ txHash: hash, replaces: hash, maxFeePerGas: decimal, maxPriorityFeePerGas: decimal }),
  /** its transaction never took: back to verified, to be sent again */
  'payment.resend': z.strictObject({ reason: text }),
  /** a failure before anything reached the chain, taken over by a new request */
  'payment.retried': z.strictObject({ payloadHash: text }),
  'payment.confirmed': z.union([
    /** on chain; gasFee: this payment's share of the transaction's fee, wei */
    z.strictObject({ txHash: hash, blockNumber: decimal, blockHash: hash, gasUsed: decimal, effectiveGasPrice: decimal.optional(), gasFee: decimal }),
    /** off chain: the rail's record (a PaymentIntent); `corrects` when it overturns an earlier payment.failed */
    z.strictObject({
      reference: text,
      amountReceived: decimal.optional(),
      currency: text.optional(),
      via: z.enum(['settle', 'webhook', 'sweep']).optional(),
      corrects: z.literal('payment.failed').optional(),
    }),
  ]),
  'payment.failed': z.union([
    /** mined and reverted: final, its gas paid (gasFee, wei) */
    z.strictObject({ txHash: hash, reason: text, message: z.string(), gasFee: decimal }),
    /** nothing reached the chain: a later request may retry it */
    z.strictObject({ reason: text, message: z.string(), broadcast: z.literal(false) }),
    /** the off-chain rail refused it (reference: its PaymentIntent, when there is one) */
    z.strictObject({ reason: text, message: z.string(), reference: text.optional() }),
  ]),
  /** the authorization's validBefore passed with nothing mined */
  'payment.expired': z.strictObject({ message: z.string() }),
  /** its confirming block left the chain (a reorg): submitted again, to be confirmed anew or failed */
  'payment.reorged': z.strictObject({ blockHash: hash, blockNumber: decimal }),

  /** a refund of (part of) this payment was accepted and is on its way (an EVM transfer not yet mined, a Stripe refund `pending`) */
  'payment.refund_pending': z.strictObject({ ...refundFields }),
  /** a refund of (part of) this payment happened: its transaction was mined, or Stripe's refund `succeeded` */
  'payment.refunded': z.strictObject({ ...refundFields, reference: text }),
  /** a refund that was pending did not happen (reverted, Stripe `failed`/`canceled`): nothing moved */
  'payment.refund_failed': z.strictObject({ ...refundFields, reference: text.nullable(), failureReason: text, message: z.string() }),

  /**
   * Subscriptions (issue 13). The facilitator writes these on the subscription's first payment (its period 0 charge),
   * in the same transaction as what they report; the ledger keeps the lifecycle.
   */
  /** a subscription credential was verified and its period 0 charge recorded (that payment's own events follow) */
  'subscription.activated': z.strictObject({
    subscriptionId,
    method: z.enum(['evm', 'stripe']),
    /** the ledger plan the merchant bound into the challenge (`opaque.plan`), null without one */
    planId: z.uuid().nullable(),
    payer: text,
    payTo: text,
    /** CAIP-2 network, or "stripe" */
    network: text,
    /** token address, or the Stripe currency */
    asset: text,
    amount: decimal,
    periodUnit: z.enum(['day', 'week', 'month']),
    periodCount: z.number().int().positive(),
    /** the start of period 0 */
    anchor: isoTime,
    /** subscriptionExpires: nothing is charged for a period starting at or after it */
    expiresAt: isoTime.nullable(),
    /** how many periods the payer pre-authorized (evm), null where the rail renews by itself (stripe) */
    authorizedPeriods: z.number().int().positive().nullable(),
    challengeId: text,
    externalId: text.optional(),
    stripeCustomer: text.optional(),
    stripeSubscription: text.optional(),
  }),
  /** a charge the ledger asked for was not attempted, so no payment exists for it (why: `reason`) */
  'subscription.charge_refused': z.strictObject({
    subscriptionId,
    periodIndex: z.number().int().nonnegative(),
    attempt: z.number().int().nonnegative(),
    commandId: text,
    reason: z.enum(['not_found', 'canceled', 'revoked', 'expired', 'window_not_open', 'window_closed', 'no_authorization', 'already_paid', 'rail_error']),
    message: z.string(),
  }),
  /** the payer withdrew the grant outside our API: an `AuthorizationCanceled` on chain, a Stripe subscription deleted */
  'subscription.revoked': z.strictObject({
    subscriptionId,
    reason: z.enum(['authorization_canceled', 'stripe_subscription_deleted']),
    message: z.string(),
    /** when the rail says it happened */
    at: isoTime,
    /** the canceled authorization's nonce and the transaction that canceled it (evm) */
    nonce: hash.optional(),
    txHash: hash.optional(),
  }),
  /** the facilitator carried out a cancel the ledger asked for (stored authorizations destroyed, Stripe told) */
  'subscription.canceled': z.strictObject({
    subscriptionId,
    commandId: text,
    at: z.enum(['period_end', 'immediately']),
    effectiveAt: isoTime,
  }),
} as const;

export type PaymentEventType = keyof typeof paymentEventDataSchemas;
export const PAYMENT_EVENT_TYPES = Object.keys(paymentEventDataSchemas) as PaymentEventType[];
export type PaymentEventData<T extends PaymentEventType> = z.infer<(typeof paymentEventDataSchemas)[T]>;

const eventOf = <T extends PaymentEventType>(type: T) =>
  z.strictObject({
    /** the outbox row's id: strictly increasing per payment, unique forever */
    eventId: z.string().regex(/^[1-9]\d*$/, 'expected an outbox event id'),
    type: z.literal(type),
    paymentId: z.uuid(),
    merchantId: z.uuid().nullable(),
    /** ISO 8601 */
    occurredAt: z.iso.datetime({ offset: true }),
    data: paymentEventDataSchemas[type],
    payment: paymentSnapshotSchema,
  });

/**
 * A job on PAYMENT_EVENTS_QUEUE, one member per event type. The facilitator's relay builds every message through it
 * and publishes only what parses; the ledger parses every job with it and refuses (for good) what does not.
 */
export const paymentEventMessageSchema = z.discriminatedUnion('type', [
  eventOf('payment.verified'),
  eventOf('payment.submitted'),
  eventOf('payment.replaced'),
  eventOf('payment.resend'),
  eventOf('payment.retried'),
  eventOf('payment.confirmed'),
  eventOf('payment.failed'),
  eventOf('payment.expired'),
  eventOf('payment.reorged'),
  eventOf('payment.refund_pending'),
  eventOf('payment.refunded'),
  eventOf('payment.refund_failed'),
  eventOf('subscription.activated'),
  eventOf('subscription.charge_refused'),
  eventOf('subscription.revoked'),
  eventOf('subscription.canceled'),
]);
export type PaymentEventMessage = z.infer<typeof paymentEventMessageSchema>;

/** The message, or why it breaks the contract: each problem with its path, on one line. */
export function parsePaymentEventMessage(value: unknown): { ok: true; message: PaymentEventMessage } | { ok: false; reason: string } {
  const parsed = paymentEventMessageSchema.safeParse(value);
  return parsed.success ? { ok: true, message: parsed.data } : { ok: false, reason: describeIssues(parsed.error.issues).join('; ') };
}

/**
 * A batch job's data: events in the order the facilitator wrote them (ascending event id), so a payment's events come
 * in order (its verification before its confirmation). Every event as a single job would carry it.
 */
export const paymentEventBatchSchema = z.strictObject({
  events: z.array(paymentEventMessageSchema).min(1).max(MAX_EVENTS_PER_BATCH),
});
export type PaymentEventBatch = z.infer<typeof paymentEventBatchSchema>;

/** What a job on PAYMENT_EVENTS_QUEUE carries: one event, or a batch (job name PAYMENT_EVENT_BATCH_JOB). */
export type PaymentEventJobData = PaymentEventMessage | PaymentEventBatch;

/** One event of a batch, parsed on its own; `value` is what the batch held, for a consumer to pass on or report. */
export type PaymentEventBatchMember = { ok: true; message: PaymentEventMessage } | { ok: false; reason: string; value: unknown };

/**
 * A batch job's events, each parsed on its own (with parsePaymentEventMessage): one event that breaks the contract
 * does not keep the others from being booked. Not a batch at all (no `events` array of 1 to MAX_EVENTS_PER_BATCH
 * members, another key): refused whole.
 */
export function parsePaymentEventBatch(value: unknown): { ok: true; events: PaymentEventBatchMember[] } | { ok: false; reason: string } {
  const envelope = z.strictObject({ events: z.array(z.unknown()).min(1).max(MAX_EVENTS_PER_BATCH) }).safeParse(value);
  if (!envelope.success) return { ok: false, reason: describeIssues(envelope.error.issues).join('; ') };
  return {
    ok: true,
    events: envelope.data.events.map((member) => {
      const parsed = parsePaymentEventMessage(member);
      return parsed.ok ? parsed : { ...parsed, value: member };
    }),
  };
}

/**
 * The events a job on PAYMENT_EVENTS_QUEUE carries, as they are (not parsed): the batch's, or the job's own data. For
 * readers of the queue that only look (tests, scripts); a consumer parses with parsePaymentEventBatch or
 * parsePaymentEventMessage.
 */
export function paymentEventsOfJob(job: { name: string; data: unknown }): unknown[] {
  if (job.name !== PAYMENT_EVENT_BATCH_JOB) return [job.data];
  const events = (job.data as { events?: unknown } | null)?.events;
  return Array.isArray(events) ? events : [];
}

/**
 * How far a value is from a union member: a key the member does not know says it is another member's (so it weighs
 * more than any number of missing or wrong values), then one per problem.
 */
const weight = (issues: readonly z.core.$ZodIssue[]) =>
  issues.reduce((sum, issue) => sum + (issue.code === 'unrecognized_keys' ? 1_000 * issue.keys.length : 1), 0);

/** Of a union (confirmed and failed data), the problems of the member it came closest to, not a bare "Invalid input". */
function describeIssues(issues: readonly z.core.$ZodIssue[], prefix: PropertyKey[] = []): string[] {
  return issues.flatMap((issue) => {
    const path = [...prefix, ...issue.path];
    if (issue.code === 'invalid_union' && issue.errors.length) {
      const closest = issue.errors.reduce((best, errors) => (weight(errors) < weight(best) ? errors : best));
      return describeIssues(closest, path);
    }
    const where = path.map(String).join('.') || 'the message';
    const what = issue.code === 'invalid_union' && path.at(-1) === 'type' ? `not a payment event type (${PAYMENT_EVENT_TYPES.join(', ')})` : issue.message;
    return [`${where}: ${what}`];
  });
}

/**
 * The ledger's acknowledgements, back to the facilitator: an event is done once the ledger has booked it (or found
 * nothing to book), not when BullMQ accepted it. The ledger publishes the ids it processed, batched, as jobs on this
 * queue (same QUEUE_PREFIX); the facilitator records them, and publishes again every event that stays
 * unacknowledged for OUTBOX_REPUBLISH_AFTER_MS. Acknowledging an event twice changes nothing.
 */
export const PAYMENT_EVENTS_ACKS_QUEUE = 'payment-events-acks';

/** Most event ids in one acknowledgement. */
export const MAX_ACKS_PER_MESSAGE = 1000;

export interface PaymentEventsAckMessage {
  /** eventIds of PaymentEventMessages the ledger has booked or skipped, decimal strings */
  eventIds: string[];
}
