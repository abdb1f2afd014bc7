import {
  billingAnchor,
  decideCharge,
  dueLifecycleEvent,
  dunningSchedule,
  paidAccessEnd,
  periodAt,
  periodIndexAt,
  scheduledEnd,
  transition,
  unusedPeriodRefund,
  type BillingPeriod,
  type SubscriptionEvent,
  type SubscriptionState,
} from '@mp/billing';
import { chargeCommandId, refundCommandId, type MerchantNoticeType, type SubscriptionCommand } from '@mp/clients';
import {
  dunningPolicyOf,
  factsOf,
  paidThrough,
  termsOf,
  type CancelAt,
  type CancelBy,
  type ChargeRecord,
  type RefundEvent,
  type SubscriptionRecord,
  type TransitionDraft,
  type UsagePeriodClose,
} from './subscription';

/**
 * The lifecycle of one subscription as plain data: what an event or the passing of time changes, as a Change the
 * repository writes in one transaction (and the commands and notices to send after it commits). The rules are
 * @mp/billing's; this file only sequences them and keeps the records that say where the subscription stands.
 */
export class Change {
  readonly transitions: TransitionDraft[] = [];
  /** charges inserted or updated, by key */
  readonly charges = new Map<string, ChargeRecord>();
  readonly commands: SubscriptionCommand[] = [];
  /** periods whose usage charges the save records (computed there, from the usage events, in SQL) */
  readonly usageCloses: UsagePeriodClose[] = [];
  record: SubscriptionRecord;

  constructor(
    readonly before: SubscriptionRecord,
    /** charges already stored that the change may touch (the in-flight one, those of the period an outcome is about) */
    readonly known: readonly ChargeRecord[] = [],
  ) {
    this.record = { ...before };
  }

  charge(periodIndex: number, attempt: number): ChargeRecord | undefined {
    return this.charges.get(chargeKey(periodIndex, attempt)) ?? this.known.find((c) => c.periodIndex === periodIndex && c.attempt === attempt);
  }

  saveCharge(charge: ChargeRecord): void {
    this.charges.set(chargeKey(charge.periodIndex, charge.attempt), charge);
  }

  get changed(): boolean {
    return (
      this.transitions.length > 0 || this.charges.size > 0 || this.commands.length > 0 || this.usageCloses.length > 0 || !sameRecord(this.before, this.record)
    );
  }
}

const chargeKey = (periodIndex: number, attempt: number) => `${periodIndex}/${attempt}`;

const ENDED: readonly SubscriptionState[] = ['canceled', 'incomplete_expired'];
const LIVE: readonly SubscriptionState[] = ['trialing', 'active', 'past_due'];

/** Applies a lifecycle event through the state table; false (and nothing recorded) when the table refuses it. */
export function applyEvent(change: Change, event: SubscriptionEvent, at: Date, cause: Record<string, unknown>): boolean {
  const s = change.record;
  const result = transition(s.state, event, s.onDunningExhausted);
  if (!result.ok) return false;
  const version = s.version + 1;
  change.record = {
    ...s,
    state: result.to,
    version,
    ...(ENDED.includes(result.to) && !ENDED.includes(s.state) && { endedAt: at, endedReason: String(cause.reason ?? event) }),
  };
  change.transitions.push({
    version,
    event,
    fromState: result.from,
    toState: result.to,
    at,
    cause,
    noticeType: noticeOf(event, result.from, result.to, cause),
  });
  return true;
}

/** The merchant webhook a transition produces, if any. */
export function noticeOf(event: SubscriptionEvent, from: SubscriptionState, to: SubscriptionState, cause: Record<string, unknown>): MerchantNoticeType | null {
  switch (event) {
    case 'activated':
    case 'trial_started':
      return 'subscription.activated';
    case 'renewal_paid':
    case 'trial_charge_paid':
      return 'subscription.renewed';
    case 'renewal_failed':
    case 'trial_charge_failed':
      return from === 'past_due' ? 'subscription.payment_failed' : 'subscription.past_due';
    case 'cancel_requested':
      return cause.by === 'rail' ? 'subscription.revoked' : 'subscription.cancel_scheduled';
    case 'payer_revoked':
      return 'subscription.revoked';
    case 'activation_expired':
      return 'subscription.incomplete_expired';
    case 'dunning_exhausted':
      return to === 'unpaid' ? 'subscription.unpaid' : 'subscription.canceled';
    case 'canceled_now':
    case 'period_ended_after_cancel':
    case 'plan_ended':
      return 'subscription.canceled';
  }
}

function periodOf(s: SubscriptionRecord, index: number): BillingPeriod {
  const terms = termsOf(s);
  return periodAt(billingAnchor(terms), terms.period, index);
}

function currentIndex(s: SubscriptionRecord, now: Date): number {
  const terms = termsOf(s);
  return periodIndexAt(billingAnchor(terms), terms.period, now);
}

function clearInFlight(s: SubscriptionRecord): SubscriptionRecord {
  return { ...s, inFlightIndex: null, inFlightAttempt: null, inFlightSince: null };
}

/**
 * What time alone makes due, applied in @mp/billing's order: an attempt whose period is over is voided; the lifecycle
 * events time made due (plan end, dunning exhausted, end of access after a cancel; and, ours, an activation whose
 * period 0 ended unpaid expires); then the charge decideCharge allows, unless dunning says its retry is not yet due.
 * Leaves next_action_at at the earliest time something will be due again.
 */
export function advance(change: Change, now: Date): void {
  const current = currentIndex(change.record, now);
  const s0 = change.record;
  if (s0.inFlightIndex !== null && s0.inFlightIndex < current) voidAttempt(change, s0.inFlightIndex, s0.inFlightAttempt!, now);
  for (let guard = 0; guard < 8; guard++) {
    const s = change.record;
    if (s.state === 'incomplete' && current > 0) {
      applyEvent(change, 'activation_expired', now, { reason: 'activation_expired', periodIndex: 0 });
      continue;
    }
    const event = dueLifecycleEvent(factsOf(s), now);
    if (!event) break;
    const cause: Record<string, unknown> = { reason: event };
    if (event === 'dunning_exhausted') Object.assign(cause, { periodIndex: s.failedIndex, attempts: s.nextAttempt });
    if (event === 'period_ended_after_cancel') Object.assign(cause, { by: s.cancelBy, cancelReason: s.cancelReason });
    if (!applyEvent(change, event, now, cause)) break;
    if (event === 'dunning_exhausted' && change.record.state === 'canceled') tellRailToStop(change, now);
  }
  closeUsagePeriods(change, now);
  let waitUntil: Date | undefined;
  const decision = decideCharge(factsOf(change.record), now);
  if (decision.due) {
    const s = change.record;
    const attempt = s.failedIndex === decision.period.index ? s.nextAttempt : 0;
    const retryAt = attempt === 0 ? now : dunningSchedule(decision.period, s.failedAt!, dunningPolicyOf(s)).retries[attempt - 1];
    if (retryAt === undefined) waitUntil = decision.period.end;
    else if (retryAt.getTime() > now.getTime()) waitUntil = retryAt;
    else requestCharge(change, decision.period, attempt, now);
  }
  change.record = { ...change.record, nextActionAt: nextActionAt(change.record, now, waitUntil) };
}

/** Most usage periods one advance closes: a subscription looked at after a long pause catches up over a few scans. */
const MAX_USAGE_CLOSES = 12;

/**
 * Closes the usage periods that are over: period n's usage is recorded once [start, end) has passed, or, when the
 * subscription ended, over the part of it that was served (to where its paid access ended, never past the end). Trial
 * days come before period 0 and are never billed; an activation that never paid bills nothing.
 */
function closeUsagePeriods(change: Change, now: Date): void {
  for (let closed = 0; closed < MAX_USAGE_CLOSES; closed++) {
    const s = change.record;
    if (s.usageNextIndex === null || s.planId === null || s.state === 'incomplete') return;
    const period = periodOf(s, s.usageNextIndex);
    const servedUntil = usageServedUntil(s);
    if (servedUntil !== undefined && servedUntil.getTime() <= period.start.getTime()) {
      change.record = { ...s, usageNextIndex: null };
      return;
    }
    const end = servedUntil !== undefined && servedUntil < period.end ? servedUntil : period.end;
    if (end.getTime() > now.getTime()) return;
    change.usageCloses.push({ merchantId: s.merchantId, subscriptionId: s.id, planId: s.planId, periodIndex: period.index, start: period.start, end });
    change.record = { ...s, usageNextIndex: end < period.end ? null : period.index + 1 };
  }
}

/**
 * Where an ended subscription's billable usage stops: the earlier of its end and of its paid access (a cancel at
 * period end is recorded by the scan a little after the boundary; its usage stops at the boundary). Undefined while it
 * runs; the epoch when nothing was served.
 */
function usageServedUntil(s: SubscriptionRecord): Date | undefined {
  if (!ENDED.includes(s.state)) return undefined;
  const paid = paidThrough(s);
  if (paid === null || s.endedAt === null) return new Date(0);
  return paid < s.endedAt ? paid : s.endedAt;
}

/**
 * The usage period still open, as far as it is served (its end, or the subscription's): what its usage comes to so
 * far is its events recorded by now. Undefined when no period is open.
 */
export function openUsageWindow(s: SubscriptionRecord): UsagePeriodClose | undefined {
  const end = usageCloseAt(s);
  if (end === undefined) return undefined;
  const period = periodOf(s, s.usageNextIndex!);
  return { merchantId: s.merchantId, subscriptionId: s.id, planId: s.planId!, periodIndex: period.index, start: period.start, end };
}

/** When the open usage period closes, if the scan has to close it. */
function usageCloseAt(s: SubscriptionRecord): Date | undefined {
  if (s.usageNextIndex === null || s.planId === null || s.state === 'incomplete') return undefined;
  const end = periodOf(s, s.usageNextIndex).end;
  const servedUntil = usageServedUntil(s);
  return servedUntil !== undefined && servedUntil < end ? servedUntil : end;
}

function requestCharge(change: Change, period: BillingPeriod, attempt: number, now: Date): void {
  const s = change.record;
  const commandId = chargeCommandId(s.id, period.index, attempt);
  change.saveCharge({
    merchantId: s.merchantId,
    subscriptionId: s.id,
    periodIndex: period.index,
    attempt,
    commandId,
    paymentId: null,
    state: 'requested',
    amount: s.amount,
    periodStart: period.start,
    periodEnd: period.end,
    requestedAt: now,
    publishedAt: now,
    publishCount: 1,
    settledAt: null,
    outcomeReason: null,
    latePaidAt: null,
  });
  change.commands.push({
    type: 'charge',
    commandId,
    subscriptionId: s.id,
    merchantId: s.merchantId,
    requestedAt: now.toISOString(),
    periodIndex: period.index,
    attempt,
    periodStart: period.start.toISOString(),
    periodEnd: period.end.toISOString(),
  });
  change.record = { ...s, inFlightIndex: period.index, inFlightAttempt: attempt, inFlightSince: now };
}

/** The attempt's period is over with no outcome: it can no longer pay for it (a later confirmation is flagged, not counted). */
function voidAttempt(change: Change, periodIndex: number, attempt: number, now: Date): void {
  const charge = change.charge(periodIndex, attempt);
  if (charge && charge.state === 'requested') change.saveCharge({ ...charge, state: 'voided', settledAt: now, outcomeReason: 'period_ended' });
  change.record = clearInFlight(change.record);
}

/** The earliest time the scheduler has something to do for this subscription, or null when only an event can move it. */
export function nextActionAt(s: SubscriptionRecord, now: Date, waitUntil?: Date): Date | null {
  const candidates: Date[] = [];
  if (waitUntil) candidates.push(waitUntil);
  // even after the end, an attempt left open is voided when its period is over
  if (s.inFlightIndex !== null) candidates.push(periodOf(s, s.inFlightIndex).end);
  if (s.state === 'incomplete') candidates.push(periodOf(s, 0).end);
  const usageClose = usageCloseAt(s);
  // periods left to close after a catch-up: at once (the scan's loop takes it again)
  if (usageClose && usageClose.getTime() <= now.getTime()) return now;
  if (usageClose) candidates.push(usageClose);
  if (LIVE.includes(s.state)) {
    const facts = factsOf(s);
    const end = scheduledEnd(facts.terms);
    if (end) candidates.push(end);
    if (s.state === 'past_due' && s.failedIndex !== null) candidates.push(periodOf(s, s.failedIndex).end);
    if (s.cancelAt === 'period_end') candidates.push(paidAccessEnd(facts));
    const decision = decideCharge(facts, now);
    if (!decision.due && decision.nextDueAt) candidates.push(decision.nextDueAt);
  }
  const future = candidates.filter((d) => d.getTime() > now.getTime());
  if (!future.length) return candidates.length ? now : null;
  return new Date(Math.min(...future.map((d) => d.getTime())));
}

/** What a payment confirmed for (period, attempt) records. */
export function recordPaid(change: Change, periodIndex: number, attempt: number, paymentId: string, now: Date): 'paid' | 'late' | 'duplicate' {
  const charge = change.charge(periodIndex, attempt) ?? adoptedCharge(change, periodIndex, attempt, now);
  if (charge.state === 'paid') return 'duplicate';
  const otherPaid = change.known.some((c) => c.periodIndex === periodIndex && c.attempt !== attempt && c.state === 'paid');
  let s = change.record;
  if (s.inFlightIndex === periodIndex && s.inFlightAttempt === attempt) s = change.record = clearInFlight(s);
  // an activation that already expired is not revived by its payment coming after all: booked, flagged, refunded by the merchant
  if (charge.state === 'voided' || otherPaid || s.state === 'incomplete_expired') {
    change.saveCharge({ ...charge, paymentId, latePaidAt: now });
    return 'late';
  }
  change.saveCharge({ ...charge, paymentId, state: 'paid', settledAt: now, outcomeReason: null });
  const wasPaid = s.lastPaidIndex;
  change.record = {
    ...s,
    lastPaidIndex: Math.max(s.lastPaidIndex ?? -1, periodIndex),
    ...(s.failedIndex !== null && s.failedIndex <= periodIndex && { failedIndex: null, failedAt: null, nextAttempt: 0 }),
  };
  const cause = { reason: 'charge_paid', periodIndex, attempt, paymentId };
  const event: SubscriptionEvent | undefined =
    s.state === 'incomplete' ? 'activated' : s.state === 'trialing' ? 'trial_charge_paid' : LIVE.includes(s.state) ? 'renewal_paid' : undefined;
  if (event) applyEvent(change, event, now, cause);
  // a renewal that was in flight when the subscriber canceled at once completes and counts; the refund covers its unused part
  if (s.cancelAt === 'immediately' && s.cancelRequestedAt && (wasPaid ?? -1) < periodIndex) addUnusedRefund(change, periodIndex, s.cancelRequestedAt, now);
  return 'paid';
}

/**
 * A paid charge's block left the chain (payment.reorged): the payment is in flight again, to be confirmed anew or
 * failed, and the period is not paid until then (no entitlement from it). `previousPaidIndex` is the last period paid
 * before it, which the caller reads from the charges.
 */
export function recordReorged(change: Change, periodIndex: number, attempt: number, previousPaidIndex: number | null, now: Date): boolean {
  const charge = change.charge(periodIndex, attempt);
  if (!charge || charge.state !== 'paid') return false;
  change.saveCharge({ ...charge, state: 'requested', settledAt: null });
  const s = change.record;
  change.record = {
    ...s,
    ...(s.lastPaidIndex === periodIndex && { lastPaidIndex: previousPaidIndex }),
    ...(s.inFlightIndex === null && { inFlightIndex: periodIndex, inFlightAttempt: attempt, inFlightSince: now }),
  };
  return true;
}

/** What a failed attempt records (payment.failed or expired, or a charge refused for a reason dunning retries). */
export function recordFailed(
  change: Change,
  periodIndex: number,
  attempt: number,
  now: Date,
  outcome: { state: 'failed' | 'refused'; reason: string; paymentId?: string },
): boolean {
  const charge = change.charge(periodIndex, attempt) ?? adoptedCharge(change, periodIndex, attempt, now);
  if (charge.state !== 'requested') return false;
  change.saveCharge({ ...charge, state: outcome.state, settledAt: now, outcomeReason: outcome.reason, paymentId: outcome.paymentId ?? charge.paymentId });
  let s = change.record;
  if (s.inFlightIndex === periodIndex && s.inFlightAttempt === attempt) s = change.record = clearInFlight(s);
  // the period is paid already, or over, or the subscription ended: nothing to retry (the boundary handles what is left)
  if ((s.lastPaidIndex ?? -1) >= periodIndex || currentIndex(s, now) > periodIndex) return true;
  if (s.state !== 'incomplete' && !LIVE.includes(s.state)) return true;
  const cause = { reason: outcome.reason, periodIndex, attempt, ...(outcome.paymentId && { paymentId: outcome.paymentId }) };
  if (s.state === 'incomplete') {
    applyEvent(change, 'activation_expired', now, cause);
    return true;
  }
  const event: SubscriptionEvent = s.state === 'trialing' ? 'trial_charge_failed' : 'renewal_failed';
  const period = periodOf(s, periodIndex);
  const firstFailure = s.failedIndex !== periodIndex;
  change.record = {
    ...s,
    failedIndex: periodIndex,
    failedAt: firstFailure ? new Date(Math.max(now.getTime(), period.start.getTime())) : s.failedAt,
    nextAttempt: attempt + 1,
  };
  applyEvent(change, event, now, cause);
  return true;
}

/** A charge the ledger has no row for (the facilitator's own attempt): recorded as asked, for its outcome. */
function adoptedCharge(change: Change, periodIndex: number, attempt: number, now: Date): ChargeRecord {
  const s = change.record;
  const period = periodOf(s, periodIndex);
  return {
    merchantId: s.merchantId,
    subscriptionId: s.id,
    periodIndex,
    attempt,
    commandId: null,
    paymentId: null,
    state: 'requested',
    amount: s.amount,
    periodStart: period.start,
    periodEnd: period.end,
    requestedAt: now,
    publishedAt: null,
    publishCount: 0,
    settledAt: null,
    outcomeReason: null,
    latePaidAt: null,
  };
}

/**
 * Records the unused part of a paid period as refunded after an immediate cancel, and asks the facilitator to refund
 * it (`refund-<subscription>-<period>`, sent after the commit, published again by the sweep until an outcome comes).
 * Only the last paid period can have an unused part: a later one is charged only once the earlier one has ended.
 */
function addUnusedRefund(change: Change, periodIndex: number, canceledAt: Date, now: Date): void {
  const s = change.record;
  if (s.cancelRefund !== 'unused_part') return;
  const amount = unusedPeriodRefund(s.amount, periodOf(s, periodIndex), canceledAt);
  if (amount <= 0n) return;
  const refundAmount = (s.refundAmount ?? 0n) + amount;
  change.record = { ...s, refundAmount, refundState: 'refund_requested' };
  change.commands.push(refundCommand(change.record, periodIndex, refundAmount, now));
}

export function refundCommand(s: SubscriptionRecord, periodIndex: number, amount: bigint, requestedAt: Date): SubscriptionCommand {
  return {
    type: 'refund',
    commandId: refundCommandId(s.id, periodIndex),
    subscriptionId: s.id,
    merchantId: s.merchantId,
    requestedAt: requestedAt.toISOString(),
    periodIndex,
    amount: amount.toString(),
    reason: 'unused_part',
  };
}

/**
 * The facilitator's outcome of the refund it was asked for: the money went back (`refunded`) or the rail did not move
 * it (`refund_failed`, for the merchant to settle by hand). Recorded as a transition without a state change, so it is
 * in the history and told to the merchant; only a refund still asked for takes an outcome.
 */
export function recordRefundOutcome(change: Change, event: RefundEvent, at: Date, cause: Record<string, unknown>): boolean {
  const s = change.record;
  if (s.refundState !== 'refund_requested') return false;
  const version = s.version + 1;
  change.record = { ...s, refundState: event, version };
  change.transitions.push({
    version,
    event,
    fromState: s.state,
    toState: s.state,
    at,
    cause,
    noticeType: event === 'refunded' ? 'subscription.refunded' : 'subscription.refund_failed',
  });
  return true;
}

export type CancelOutcome = { kind: 'recorded' | 'unchanged' } | { kind: 'ended'; state: SubscriptionState };

export interface CancelRequest {
  at: CancelAt;
  by: CancelBy;
  reason: string | null;
  now: Date;
}

/**
 * A cancel by the merchant, the payer or the rail. At period end is a flag (the paid period, or the trial, is served
 * to its end); immediately ends access now and, when the plan says so, records the refund of the unused part of the
 * paid period. Asking again answers the first outcome; immediately after at period end upgrades it. Where nothing paid
 * is left to serve (incomplete, unpaid), at period end means now.
 */
export function requestCancel(change: Change, request: CancelRequest): CancelOutcome {
  const s = change.record;
  if (ENDED.includes(s.state)) return s.cancelAt ? { kind: 'unchanged' } : { kind: 'ended', state: s.state };
  if (s.cancelAt === 'immediately' || (s.cancelAt === 'period_end' && request.at === 'period_end')) return { kind: 'unchanged' };
  const cause = { reason: request.reason ?? `canceled by the ${request.by}`, by: request.by, at: request.at };
  const atPeriodEnd = request.at === 'period_end' && LIVE.includes(s.state);
  if (atPeriodEnd) {
    change.record = { ...s, cancelAt: 'period_end', cancelRequestedAt: request.now, cancelBy: request.by, cancelReason: request.reason };
    applyEvent(change, 'cancel_requested', request.now, cause);
  } else {
    change.record = { ...s, cancelAt: 'immediately', cancelRequestedAt: request.now, cancelBy: request.by, cancelReason: request.reason };
    applyEvent(change, request.by === 'rail' ? 'payer_revoked' : 'canceled_now', request.now, { ...cause, at: 'immediately' });
    if (s.lastPaidIndex !== null) addUnusedRefund(change, s.lastPaidIndex, request.now, request.now);
  }
  if (request.by !== 'rail') {
    const at = change.record.cancelAt!;
    change.commands.push({
      type: 'cancel',
      commandId: cancelCommandId(s.id, at),
      subscriptionId: s.id,
      merchantId: s.merchantId,
      requestedAt: request.now.toISOString(),
      at,
      effectiveAt: cancelEffectiveAt(change.record, request.now).toISOString(),
    });
  }
  return { kind: 'recorded' };
}

/**
 * Dunning ran out and the plan cancels: the rail is told to stop (`cancel` immediately), so nothing can collect a later
 * period by itself (Stripe Billing would go on invoicing) and no stored authorization outlives the subscription.
 */
function tellRailToStop(change: Change, now: Date): void {
  const s = change.record;
  change.commands.push({
    type: 'cancel',
    commandId: cancelCommandId(s.id, 'immediately'),
    subscriptionId: s.id,
    merchantId: s.merchantId,
    requestedAt: now.toISOString(),
    at: 'immediately',
    effectiveAt: now.toISOString(),
  });
}

export function cancelCommandId(subscriptionId: string, at: CancelAt): string {
  return `cancel-${subscriptionId}-${at}`;
}

/** When the ledger ends the subscription after a cancel: now, or the end of what was paid. */
export function cancelEffectiveAt(s: SubscriptionRecord, now: Date): Date {
  if (s.cancelAt !== 'period_end') return s.cancelRequestedAt ?? now;
  const end = paidAccessEnd(factsOf(s));
  return end.getTime() > now.getTime() ? end : now;
}

function sameRecord(a: SubscriptionRecord, b: SubscriptionRecord): boolean {
  return (Object.keys(a) as (keyof SubscriptionRecord)[]).every((key) => {
    const x = a[key];
    const y = b[key];
    return x instanceof Date && y instanceof Date ? x.getTime() === y.getTime() : x === y;
  });
}
