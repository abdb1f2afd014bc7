import { z } from 'zod';

/**
 * The facilitator's payment-channel events (MPP `session` on EVM, and x402 `batch-settlement` channels) as the ledger
 * consumes them: every row of the
 * facilitator's channel outbox (`facilitator.channel_events`, written in the same transaction as the change it records)
 * is published as a BullMQ job on this queue, under the deployment's QUEUE_PREFIX; the ledger books each as a transfer
 * between the channel's accounts. Delivery is at least once, in event-id order per channel: consumers key their effects
 * by (`channelId`, `eventId`).
 *
 * Amounts are atomic units of the channel's token as decimal strings; cumulative figures (`acceptedCumulative`,
 * `spent`, `settled`) are the channel's totals after the event, `delta`/`amount` what the event added, so a consumer
 * can both book the change and check it has not missed one.
 */
export const CHANNEL_EVENTS_QUEUE = 'channel-events';

/** The job id of an event: `channel-event-<eventId>-<channelId>` (the channel id keeps apart a restored database's reused ids). */
export function channelEventJobId(eventId: string, channelId: string): string {
  return `channel-event-${eventId}-${channelId.toLowerCase()}`;
}

/** Same retention and retry policy as payment events: kept a day once consumed (re-adds are no-ops), retried with backoff. */
export const CHANNEL_EVENT_JOB_OPTIONS = {
  removeOnComplete: { age: 24 * 3600 },
  removeOnFail: false,
  attempts: 20,
  backoff: { type: 'exponential', delay: 500 },
} as const;

const decimal = z.string().regex(/^\d+$/, 'expected a decimal string of a non-negative integer');
const hash = z.string().regex(/^0x[0-9a-f]{64}$/, 'expected a lowercase 32-byte 0x hex hash');
const address = z.string().regex(/^0x[0-9a-f]{40}$/, 'expected a lowercase 0x hex address');

/** Which kind of channel: an MPP session on the EVM escrow, or an x402 batch-settlement channel. */
export const CHANNEL_SCHEMES = ['mpp-session', 'x402-batch'] as const;
export type ChannelScheme = (typeof CHANNEL_SCHEMES)[number];

/**
 * The channel as the facilitator knew it when the event was written. An x402 batch-settlement channel (`scheme:
 * "x402-batch"`) has the batch-settlement contract as its `escrow` and the receiver as its `payee`; its `deposit` is
 * every deposit added up, `acceptedCumulative` and `spent` are both what was claimed (a claim is the merchant's
 * accepted and earned revenue at once), `settled` the part of it paid out to the receiver, and `refunded` (required
 * for it) what went back to the payer; it is never finalized on chain (a refunded channel can be deposited into again),
 * so its state stays `open`.
 */
export const channelSnapshotSchema = z
  .strictObject({
    /** absent: `mpp-session` (the events written before batch channels were booked) */
    scheme: z.enum(CHANNEL_SCHEMES).optional(),
    channelId: hash,
    merchantId: z.uuid().nullable(),
    /** CAIP-2, e.g. eip155:31337 */
    network: z.string().regex(/^eip155:\d+$/),
    escrow: address,
    /** the ERC-20 token */
    asset: address,
    payer: address,
    payee: address,
    /** on chain */
    deposit: decimal,
    /** cumulative vouchers accepted */
    acceptedCumulative: decimal,
    /** what the merchant charged against the channel */
    spent: decimal,
    /** paid out to the payee on chain */
    settled: decimal,
    /** x402-batch only: refunded to the payer so far (refunds and finalized withdrawals) */
    refunded: decimal.optional(),
    /** open | closing (payer requested close, grace running) | closed (finalized on chain) */
    state: z.enum(['open', 'closing', 'closed']),
  })
  .superRefine((value, ctx) => {
    const batch = value.scheme === 'x402-batch';
    if (batch && value.refunded === undefined) ctx.addIssue({ code: 'custom', path: ['refunded'], message: 'required for an x402-batch channel' });
    if (!batch && value.refunded !== undefined) ctx.addIssue({ code: 'custom', path: ['refunded'], message: 'only an x402-batch channel carries it' });
  });
export type ChannelSnapshot = z.infer<typeof channelSnapshotSchema>;

export const channelEventDataSchemas = {
  /** opened on chain (direct or relayed) and its first voucher checked; `deposit` was pulled from the payer */
  'channel.opened': z.strictObject({ deposit: decimal, txHash: hash }),
  /** the payer added `amount` to the deposit on chain */
  'channel.topped_up': z.strictObject({ amount: decimal, deposit: decimal, txHash: hash }),
  /** a voucher raised the accepted cumulative by `delta` (never sent for a replay or a lower voucher) */
  'channel.voucher_accepted': z.strictObject({ delta: decimal, acceptedCumulative: decimal }),
  /** the merchant charged `amount` for delivered units (`chargeId` is the merchant's idempotency key) */
  'channel.spent': z.strictObject({ chargeId: z.string().min(1).max(200), amount: decimal, spent: decimal, units: decimal.optional() }),
  /** `delta` paid out to the payee on chain by settle (or by close, before its refund); `settled` is the new total */
  'channel.settled': z.strictObject({ delta: decimal, settled: decimal, txHash: hash }),
  /** the payer requested close on chain; the grace period ends at `graceEndsAt` */
  'channel.close_requested': z.strictObject({ graceEndsAt: z.iso.datetime({ offset: true }), txHash: hash }),
  /** finalized on chain: `refunded` went back to the payer (by the payee's close, or the payer's withdraw) */
  'channel.closed': z.strictObject({ by: z.enum(['close', 'withdraw']), refunded: decimal, settled: decimal, txHash: hash }),
  /**
   * x402-batch: `amount` of the unclaimed deposit went back to the payer on chain (a cooperative refund, or a
   * withdrawal the payer finalized); `refunded` is the new total. The channel stays usable.
   */
  'channel.refunded': z.strictObject({ by: z.enum(['refund', 'withdraw']), amount: decimal, refunded: decimal, txHash: hash }),
};

export type ChannelEventType = keyof typeof channelEventDataSchemas;
export const CHANNEL_EVENT_TYPES = Object.keys(channelEventDataSchemas) as ChannelEventType[];

const channelEventOf = <T extends ChannelEventType>(type: T) =>
  z.strictObject({
    /** the outbox row's id: strictly increasing per channel, unique forever */
    eventId: z.string().regex(/^[1-9]\d*$/, 'expected an outbox event id'),
    type: z.literal(type),
    /** ISO 8601 */
    occurredAt: z.iso.datetime({ offset: true }),
    data: channelEventDataSchemas[type],
    channel: channelSnapshotSchema,
  });

export const channelEventMessageSchema = z.discriminatedUnion('type', [
  channelEventOf('channel.opened'),
  channelEventOf('channel.topped_up'),
  channelEventOf('channel.voucher_accepted'),
  channelEventOf('channel.spent'),
  channelEventOf('channel.settled'),
  channelEventOf('channel.close_requested'),
  channelEventOf('channel.closed'),
  channelEventOf('channel.refunded'),
]);
export type ChannelEventMessage = z.infer<typeof channelEventMessageSchema>;

export function parseChannelEventMessage(value: unknown): { ok: true; message: ChannelEventMessage } | { ok: false; reason: string } {
  const parsed = channelEventMessageSchema.safeParse(value);
  return parsed.success
    ? { ok: true, message: parsed.data }
    : { ok: false, reason: parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ') };
}
