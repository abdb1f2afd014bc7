/**
 * The facilitator's payment events as the ledger consumes them: every row of its transactional outbox
 * (`facilitator.payment_events`) is published once as a BullMQ job on this queue, under the deployment's
 * QUEUE_PREFIX, with job id `event-<eventId>`. Delivery is at least once: consumers key their effects by `eventId`.
 */
export const PAYMENT_EVENTS_QUEUE = 'payment-events';

export type PaymentEventType =
  | 'payment.verified'
  | 'payment.submitted'
  | 'payment.replaced'
  | 'payment.resend'
  | 'payment.retried'
  | 'payment.confirmed'
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
