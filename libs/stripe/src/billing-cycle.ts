import { atTime, type ApiContext } from './api';
import type { Subscription, TestClock } from './billing-types';
import { findCustomer } from './customers';
import { changedAttributes, type RequestInfo } from './events';
import { newId } from './ids';
import { collectInvoice, createSubscriptionInvoice, defaultPaymentMethodFor, DRAFT_SECONDS, finalizeInvoice, voidOpenInvoice } from './invoice-lifecycle';
import { nextBoundaryAfter } from './periods';
import { endSubscription, incompleteExpiresAt } from './subscriptions';

/**
 * What Stripe does by itself as a test clock's time passes, for that clock's customers, in time order:
 * - at a period's end: the subscription ends if it was set to (`cancel_at_period_end`, or `cancel_at` within the
 *   period: `customer.subscription.deleted`), otherwise a new period starts (`customer.subscription.updated`) with a
 *   draft renewal invoice (`invoice.created`);
 * - an hour later the draft is finalized (`invoice.finalized`) and collected: `invoice.paid` and
 *   `invoice.payment_succeeded`, or `invoice.payment_failed`, `invoice.updated` and, for an active subscription,
 *   `customer.subscription.updated` to `past_due`. No retry is ever scheduled (Stripe's retries are off in the fake);
 * - an `incomplete` subscription whose first invoice is still unpaid 23 hours on becomes `incomplete_expired`.
 * Missed periods are not skipped: each period up to the new time gets its own invoice, as at Stripe.
 */

interface DueAction {
  at: number;
  /** among actions at the same second: finalizing before ending before renewing */
  rank: number;
  run(context: ApiContext): void;
}

/** Bound on actions in one advance; Stripe's own limit (two intervals per advance) keeps real runs far below it. */
const MAX_ACTIONS = 100_000;

export function runClockUntil(context: ApiContext, info: RequestInfo, clock: TestClock, until: number): void {
  for (let done = 0; done < MAX_ACTIONS; done++) {
    const next = dueActions(context, info, clock.id, until).sort((a, b) => a.at - b.at || a.rank - b.rank)[0];
    if (!next) break;
    clock.frozen_time = Math.max(clock.frozen_time, next.at);
    next.run(atTime(context, next.at));
  }
  clock.frozen_time = until;
}

function dueActions(context: ApiContext, info: RequestInfo, clockId: string, until: number): DueAction[] {
  const actions: DueAction[] = [];
  for (const invoice of context.store.invoices.all()) {
    const at = invoice.automatically_finalizes_at;
    if (invoice.test_clock !== clockId || invoice.status !== 'draft' || !invoice.auto_advance || at === null || at > until) continue;
    actions.push({
      at,
      rank: 0,
      run: (local) => {
        finalizeInvoice(local, info, invoice);
        collectInvoice(local, info, invoice, defaultPaymentMethodFor(local, invoice));
      },
    });
  }
  for (const subscription of context.store.subscriptions.all()) {
    if (subscription.test_clock !== clockId) continue;
    const action = subscriptionAction(context, info, subscription);
    if (action && action.at <= until) actions.push(action);
  }
  return actions;
}

function subscriptionAction(context: ApiContext, info: RequestInfo, subscription: Subscription): DueAction | undefined {
  if (subscription.status === 'incomplete') {
    return {
      at: incompleteExpiresAt(subscription),
      rank: 1,
      run: (local) => {
        const invoice = subscription.latest_invoice ? local.store.invoices.get(subscription.latest_invoice) : undefined;
        if (invoice?.status === 'open') voidOpenInvoice(local, info, invoice);
        endSubscription(local, info, subscription, local.nowSeconds(), { canceledAt: null, status: 'incomplete_expired' });
      },
    };
  }
  if (subscription.status !== 'active' && subscription.status !== 'past_due') return undefined;
  const periodEnd = subscription.items.data[0].current_period_end;
  if (subscription.cancel_at !== null && subscription.cancel_at <= periodEnd) {
    return { at: subscription.cancel_at, rank: 1, run: (local) => endSubscription(local, info, subscription, local.nowSeconds()) };
  }
  return { at: periodEnd, rank: 2, run: (local) => renew(local, info, subscription) };
}

/** The next period starts now; its invoice is a draft, finalized and collected an hour later. */
function renew(context: ApiContext, info: RequestInfo, subscription: Subscription): void {
  const now = context.nowSeconds();
  const item = subscription.items.data[0];
  const before = structuredClone(subscription);
  const previousStart = item.current_period_start;
  item.current_period_start = now;
  item.current_period_end = nextBoundaryAfter(subscription.billing_cycle_anchor, item.price.recurring!, now);
  const invoiceId = newId('in');
  subscription.latest_invoice = invoiceId;
  context.events.emit('customer.subscription.updated', subscription, info, changedAttributes(before, subscription));
  createSubscriptionInvoice(context, info, subscription, findCustomer(context, subscription.customer), {
    id: invoiceId,
    reason: 'subscription_cycle',
    period: { start: now, end: item.current_period_end },
    window: { start: previousStart, end: now },
    finalizesAt: now + DRAFT_SECONDS,
  });
}
