/**
 * The facilitator's payment events as the ledger consumes them: every row of its transactional outbox
 * (`facilitator.payment_events`) is published as a BullMQ job on this queue, under the deployment's QUEUE_PREFIX,
 * with job id `event-<eventId>`, and again while the ledger has not acknowledged it (PAYMENT_EVENTS_ACKS_QUEUE).
 * Delivery is at least once: consumers key their effects by `eventId`.
 */
export const PAYMENT_EVENTS_QUEUE = 'payment-events';

export type PaymentEventType =
  | 'payment.verified'
  | 'payment.submitted'
  | 'payment.replaced'
  | 'payment.resend'
  | 'payment.retried'
  | 'payment.confirmed'
  /** its confirming block left the chain (a reorg): submitted again, to be confirmed anew or failed */
  | 'payment.reorged'
  | 'payment.failed'
  | 'payment.expired';

/** The payment as it stood when the event was published (amounts in atomic units, decimal strings). */
export interface PaymentSnapshot {
  id: string;
  state: string;
  protocol: 'x402' | 'mpp';
  rail: 'evm' | 'stripe';
  network: string;
  asset: string;
  payer: string;
  payTo: string;
  amount: string;
  nonce: string;
  scheme: string;
  challengeId: string | null;
  reference: string | null;
  txHash: string | null;
  merchantId: string | null;
}

export interface PaymentEventMessage {
  /** the outbox row's id: strictly increasing per payment, unique forever */
  eventId: string;
  type: PaymentEventType;
  paymentId: string;
  merchantId: string | null;
  occurredAt: string;
  /** the event's own data, e.g. payment.confirmed: { txHash, blockNumber, gasUsed, effectiveGasPrice, gasFee (this payment's share of the fee, wei) } or { reference } */
  data: Record<string, unknown>;
  payment: PaymentSnapshot;
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
