import { atTime, type ApiContext } from './api';
import type { Invoice, Subscription, TestClock } from './billing-types';
import { findCustomer } from './customers';
import { changedAttributes, type RequestInfo } from './events';
import { newId } from './ids';
import { collectInvoice, createSubscriptionInvoice, defaultPaymentMethodFor, DRAFT_SECONDS, finalizeInvoice, voidOpenInvoice } from './invoice-lifecycle';
import { MinQueue } from './min-queue';
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

/** A due action in the queue, with what it is about: it runs only if that object still has the same action due then. */
interface Scheduled {
  action: DueAction;
  /** among equal (at, rank): the object's creation order, as the store lists them */
  order: number;
  object: { kind: 'invoice'; invoice: Invoice } | { kind: 'subscription'; subscription: Subscription };
}

/** Bound on actions in one advance; Stripe's own limit (two intervals per advance) keeps real runs far below it. */
const MAX_ACTIONS = 100_000;

/**
 * Runs every action due up to `until`, earliest first. The clock's objects are scanned once into a queue ordered by
 * time; an action changes only its own subscription and that subscription's invoices, so after each one only those
 * are looked at again (a queued action whose object no longer has it due is dropped). One advance over N
 * subscriptions is then O(N log N), not a rescan of every object per action.
 */
export function runClockUntil(context: ApiContext, info: RequestInfo, clock: TestClock, until: number): void {
  const queue = new MinQueue<Scheduled>((a, b) => a.action.at - b.action.at || a.action.rank - b.action.rank || a.order - b.order);
  const order = new Map<object, number>();
  const queued = new Set<string>();
  const clockId = clock.id;
  const schedule = (object: Scheduled['object']) => {
    const target = object.kind === 'invoice' ? object.invoice : object.subscription;
    const action = actionOf(context, info, clockId, object, until);
    const key = action && `${target.id}:${action.at}:${action.rank}`;
    if (!action || queued.has(key!)) return;
    if (!order.has(target)) order.set(target, order.size);
    queued.add(key!);
    queue.push({ action, order: order.get(target)!, object });
  };
  for (const invoice of context.store.invoices.all()) schedule({ kind: 'invoice', invoice });
  for (const subscription of context.store.subscriptions.all()) schedule({ kind: 'subscription', subscription });

  for (let done = 0; done < MAX_ACTIONS;) {
    const next = queue.pop();
    if (!next) break;
    const target = next.object.kind === 'invoice' ? next.object.invoice : next.object.subscription;
    queued.delete(`${target.id}:${next.action.at}:${next.action.rank}`);
    const current = actionOf(context, info, clockId, next.object, until);
    // what ran since changed it (voided, paid, ended, renewed): its current action, if any, is queued on its own
    if (!current || current.at !== next.action.at || current.rank !== next.action.rank) {
      schedule(next.object);
      continue;
    }
    clock.frozen_time = Math.max(clock.frozen_time, current.at);
    current.run(atTime(context, current.at));
    done += 1;
    const subscription =
      next.object.kind === 'subscription'
        ? next.object.subscription
        : context.store.subscriptions.get(next.object.invoice.parent.subscription_details.subscription);
    if (next.object.kind === 'invoice') schedule(next.object);
    if (subscription) {
      schedule({ kind: 'subscription', subscription });
      const latest = subscription.latest_invoice ? context.store.invoices.get(subscription.latest_invoice) : undefined;
      if (latest) schedule({ kind: 'invoice', invoice: latest });
    }
  }
  clock.frozen_time = until;
}

function actionOf(context: ApiContext, info: RequestInfo, clockId: string, object: Scheduled['object'], until: number): DueAction | undefined {
  const action = object.kind === 'invoice' ? invoiceAction(info, clockId, object.invoice) : subscriptionAction(context, info, clockId, object.subscription);
  return action && action.at <= until ? action : undefined;
}

function invoiceAction(info: RequestInfo, clockId: string, invoice: Invoice): DueAction | undefined {
  const at = invoice.automatically_finalizes_at;
  if (invoice.test_clock !== clockId || invoice.status !== 'draft' || !invoice.auto_advance || at === null) return undefined;
  return {
    at,
    rank: 0,
    run: (local) => {
      finalizeInvoice(local, info, invoice);
      collectInvoice(local, info, invoice, defaultPaymentMethodFor(local, invoice));
    },
  };
}

function subscriptionAction(context: ApiContext, info: RequestInfo, clockId: string, subscription: Subscription): DueAction | undefined {
  if (subscription.test_clock !== clockId) return undefined;
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
