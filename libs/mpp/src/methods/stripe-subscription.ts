import { createHash } from 'node:crypto';
import { z } from 'zod';
import { parsePeriod, periodBoundary, periodIndexAt, stripeRepresentable, type Period, InvalidPeriodError } from '@mp/billing';
import type { Challenge } from '../challenge';
import { fail, ok, type Result } from '../problems';
import { stripeAmountSchema } from './stripe-charge';

/**
 * Method `stripe`, intent `subscription` (draft-stripe-subscription-00, recurring-and-streaming.md §1.3): a
 * PaymentMethod the payer lets us charge off-session, a Customer, a Price and a Subscription with
 * `charge_automatically`, `error_if_incomplete` and no prorations. Pure checks; every Stripe call is the rail's.
 */

const REFUSED_FIELDS: Record<string, string> = {
  recipient: 'the stripe profile has no recipient: the money goes to the merchant account of the network profile',
  subscriptionExpires: 'the stripe profile has no subscriptionExpires: a Stripe subscription runs until it is canceled',
  expires: "the request must not repeat the challenge's expires",
};

export const stripeSubscriptionRequestSchema = z
  .strictObject({
    amount: stripeAmountSchema,
    currency: z.string().regex(/^[a-z]{3}$/, 'must be a lowercase ISO 4217 code such as "usd"'),
    periodUnit: z.enum(['day', 'week', 'month'], 'must be day, week or month (Stripe has year too, the intent does not)'),
    periodCount: z.string().regex(/^[1-9][0-9]*$/, 'must be a positive decimal string'),
    description: z.string().max(1024).optional(),
    externalId: z.string().max(256).optional(),
    methodDetails: z.strictObject({
      networkId: z.string().min(1).max(256),
      /** only types that pay synchronously and can be charged off-session */
      paymentMethodTypes: z
        .array(z.enum(['card', 'link'], 'must be card or link: types that pay at once and off-session'))
        .min(1)
        .max(2),
      /** carried to Stripe, never used for a decision */
      metadata: z.record(z.string().max(40), z.string().max(500)).optional(),
    }),
  })
  .superRefine((request, context) => {
    const period = stripePeriodProblem(request.periodUnit, request.periodCount);
    if (period) context.addIssue({ code: 'custom', path: ['periodCount'], message: period });
  });

export type StripeSubscriptionRequest = z.infer<typeof stripeSubscriptionRequestSchema>;

export const stripeSubscriptionPayloadSchema = z.strictObject({
  paymentMethod: z.string().regex(/^pm_[A-Za-z0-9_]{1,250}$/, 'must be a PaymentMethod id (pm_...)'),
  customer: z
    .string()
    .regex(/^cus_[A-Za-z0-9_]{1,250}$/, 'must be a Customer id (cus_...)')
    .optional(),
});

export type StripeSubscriptionPayload = z.infer<typeof stripeSubscriptionPayloadSchema>;

export interface StripeSubscriptionCredential {
  request: StripeSubscriptionRequest;
  payload: StripeSubscriptionPayload;
  period: Period;
}

/** Why Stripe cannot carry the period exactly (a Price's `interval_count` caps), or undefined. Never rounded. */
function stripePeriodProblem(unit: string, count: string): string | undefined {
  try {
    const period = parsePeriod(unit, count);
    return stripeRepresentable(period) ? undefined : `a Stripe price cannot recur every ${count} ${unit}s (at most 1095 days, 156 weeks or 36 months)`;
  } catch (error) {
    if (error instanceof InvalidPeriodError) return error.message;
    throw error;
  }
}

/** Shape checks of a stripe subscription credential, before any Stripe call; the PaymentMethod itself is Stripe's to say. */
export function checkStripeSubscription(challenge: Challenge, payload: unknown): Result<StripeSubscriptionCredential> {
  const request = parseStripeSubscriptionRequest(challenge.request);
  if (!request.ok) return fail('invalid-challenge', `the challenge is not a stripe subscription request: ${request.error.detail}`);
  const parsed = stripeSubscriptionPayloadSchema.safeParse(payload);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return fail('invalid-payload', `payload.${issue?.path.join('.') ?? ''}: ${issue?.message ?? 'invalid'}`);
  }
  return ok({ request: request.value, payload: parsed.data, period: parsePeriod(request.value.periodUnit, request.value.periodCount) });
}

/** A merchant's subscription offer, checked before a challenge is issued for it: the reason names the field. */
export function parseStripeSubscriptionRequest(value: unknown): Result<StripeSubscriptionRequest> {
  if (value && typeof value === 'object') {
    const refused = Object.keys(value).find((key) => key in REFUSED_FIELDS);
    if (refused) return fail('invalid-challenge', `${refused}: ${REFUSED_FIELDS[refused]}`);
  }
  const parsed = stripeSubscriptionRequestSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return fail('invalid-challenge', `${issue?.path.join('.') || 'request'}: ${issue?.message ?? 'invalid'}`);
  }
  return ok(parsed.data);
}

/** The Price's `recurring`: the period exactly, never rounded (the request's checks made sure it fits). */
export function stripeRecurring(request: Pick<StripeSubscriptionRequest, 'periodUnit' | 'periodCount'>): {
  interval: 'day' | 'week' | 'month';
  interval_count: number;
} {
  return { interval: request.periodUnit, interval_count: Number(request.periodCount) };
}

/**
 * The idempotency key of `POST /v1/subscriptions`: over (challenge, payer, payment method, amount, currency, period),
 * so a retried activation finds the same subscription and a different one never does.
 */
export function stripeSubscriptionIdempotencyKey(input: {
  challengeId: string;
  customer: string;
  paymentMethod: string;
  request: Pick<StripeSubscriptionRequest, 'amount' | 'currency' | 'periodUnit' | 'periodCount'>;
}): string {
  const { challengeId, customer, paymentMethod, request } = input;
  const digest = createHash('sha256')
    .update(JSON.stringify([challengeId, customer, paymentMethod, request.amount, request.currency, request.periodUnit, request.periodCount]))
    .digest('base64url');
  return `mpp_sub_${digest}`;
}

/** The fields of a Stripe invoice (expanded with `payments`) the profile decides on. */
export interface StripeInvoiceFacts {
  id: string;
  status: string | null;
  customer: string | null;
  currency: string;
  amount_paid: number;
  total: number;
  subtotal: number;
  discounts?: unknown[] | null;
  total_discount_amounts?: { amount: number }[] | null;
  total_taxes?: { amount: number }[] | null;
  total_pretax_credit_amounts?: { amount: number }[] | null;
  parent?: { type: string; subscription_details?: { subscription: string | { id: string } } | null } | null;
  lines: {
    data: {
      amount: number;
      currency: string;
      period: { start: number; end: number };
      parent?: { type: string; subscription_item_details?: { subscription: string | null; proration: boolean } | null } | null;
    }[];
    has_more?: boolean;
  };
  payments?: { data: { payment: { type: string; payment_intent?: string | { id: string } | null }; status: string }[] } | null;
}

export interface ExpectedInvoice {
  subscription: string;
  customer: string;
  amount: string;
  currency: string;
  /** the first paid invoice's period start: period 0 */
  anchor: Date;
  period: Period;
}

export type InvoiceRefusal =
  | 'not_paid'
  | 'other_subscription'
  | 'other_customer'
  | 'not_one_subscription_line'
  | 'discount_tax_or_credit'
  | 'proration'
  | 'amount_mismatch'
  | 'currency_mismatch'
  | 'not_a_period'
  | 'no_payment_intent';

/**
 * Whether a paid invoice is the charge of one canonical period of the subscription (§1.3 "Invoice validation"): ours,
 * paid, one subscription line and nothing else, no discount, tax, credit or proration, the amount and currency, and a
 * line period that starts exactly on a boundary from the anchor. Whether that period is already recorded is the
 * caller's (a unique key), as is voiding a stale invoice.
 */
export function judgeSubscriptionInvoice(
  invoice: StripeInvoiceFacts,
  expected: ExpectedInvoice,
): { ok: true; periodIndex: number; paymentIntent: string } | { ok: false; reason: InvoiceRefusal; detail: string } {
  const refuse = (reason: InvoiceRefusal, detail: string) => ({ ok: false as const, reason, detail: `invoice ${invoice.id}: ${detail}` });
  if (invoice.status !== 'paid') return refuse('not_paid', `status is ${invoice.status}, not paid`);
  const subscription = idOf(invoice.parent?.subscription_details?.subscription);
  if (invoice.parent?.type !== 'subscription_details' || subscription !== expected.subscription)
    return refuse('other_subscription', 'is not an invoice of this subscription');
  if (invoice.customer !== expected.customer) return refuse('other_customer', 'belongs to another customer');
  const lines = invoice.lines.data;
  if (invoice.lines.has_more || lines.length !== 1)
    return refuse('not_one_subscription_line', `has ${invoice.lines.has_more ? 'more than 10' : lines.length} lines, not one`);
  const [line] = lines;
  const item = line.parent?.subscription_item_details;
  if (line.parent?.type !== 'subscription_item_details' || !item || item.subscription !== expected.subscription) {
    return refuse('not_one_subscription_line', 'its line is not an item of this subscription');
  }
  if (item.proration) return refuse('proration', 'its line is a proration');
  const discounted = (invoice.discounts?.length ?? 0) > 0 || (invoice.total_discount_amounts ?? []).some((d) => d.amount !== 0);
  const taxed = (invoice.total_taxes ?? []).some((t) => t.amount !== 0);
  const credited = (invoice.total_pretax_credit_amounts ?? []).some((c) => c.amount !== 0);
  if (discounted || taxed || credited || invoice.total !== invoice.subtotal) return refuse('discount_tax_or_credit', 'carries a discount, a tax or a credit');
  if (invoice.currency !== expected.currency || line.currency !== expected.currency)
    return refuse('currency_mismatch', `is in ${invoice.currency}, not ${expected.currency}`);
  const amount = BigInt(expected.amount);
  if (BigInt(invoice.amount_paid) !== amount || BigInt(line.amount) !== amount || BigInt(invoice.total) !== amount) {
    return refuse('amount_mismatch', `paid ${invoice.amount_paid}, not ${expected.amount}`);
  }
  const start = new Date(line.period.start * 1000);
  const index = periodIndexAt(expected.anchor, expected.period, start);
  if (index < 0 || periodBoundary(expected.anchor, expected.period, index).getTime() !== start.getTime()) {
    return refuse('not_a_period', `its line starts at ${start.toISOString()}, not on a period boundary`);
  }
  if (periodBoundary(expected.anchor, expected.period, index + 1).getTime() !== line.period.end * 1000) {
    return refuse('not_a_period', `its line ends at ${new Date(line.period.end * 1000).toISOString()}, not at the end of period ${index}`);
  }
  const paid = invoice.payments?.data.find((p) => p.status === 'paid' && p.payment.type === 'payment_intent');
  const paymentIntent = idOf(paid?.payment.payment_intent);
  if (!paymentIntent) return refuse('no_payment_intent', 'has no paid PaymentIntent (expand payments)');
  return { ok: true, periodIndex: index, paymentIntent };
}

const idOf = (value: string | { id: string } | null | undefined): string | undefined => (typeof value === 'string' ? value : value?.id);
