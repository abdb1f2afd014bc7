export {
  DEFAULT_API_VERSION,
  MAX_BODY_BYTES,
  startFakeStripe,
  stripeClientOptions,
  type FakeStripe,
  type FakeStripeOptions,
  type RecordedRequest,
} from './fake-stripe.server';
export { SPT_ERROR_CODES, type StripeErrorBody } from './errors';
export type { HeldRequest } from './faults';
export { DECLINE_MESSAGES, type DeclineCode, type DeclineOptions } from './declines';
export { addIntervals, nextBoundaryAfter, periodBoundary, type Recurrence } from './periods';
export type {
  Customer,
  Invoice,
  InvoiceLineItem,
  InvoicePayment,
  PaymentMethod,
  Price,
  Product,
  RecurringInterval,
  Subscription,
  SubscriptionItem,
  SubscriptionStatus,
  TestClock,
} from './billing-types';
export { decodeForm, FormError, type FormObject, type FormValue } from './form';
export { stripeFee } from './balance-transactions';
export { TEST_PAYMENT_METHODS, type PaymentOutcome } from './test-tokens';
export { DEFAULT_RETRY_DELAYS_MS, stripeSignatureHeader, type WebhookEndpoint } from './webhooks';
export type { BalanceTransaction, Charge, PaymentIntent, Refund, SharedPaymentToken, StripeEvent, StripeEventType } from './store';
