import { Inject, Injectable, Logger } from '@nestjs/common';
import { periodAt } from '@mp/billing';
import { EVM_METHOD } from '@mp/mpp';
import type { SubscriptionCommand } from '@mp/clients';
import { REFUND_REASONS, type CreateRefundDto, type RefundReason } from '../refunds/refunds.dto';
import { RefundsService } from '../refunds/refunds.service';
import { Clock } from '../x402/clock';
import { SUBSCRIPTION_RAILS, type ChargePreparation, type ChargeRequest, type SubscriptionRail } from './subscription-rail';
import {
  periodKey,
  Subscriptions,
  type ChargeCommandKey,
  type ChargeFacts,
  type ChargeItem,
  type ChargeOutcome,
  type ChargeRefusal,
  type SubscriptionRecord,
} from './subscriptions.repository';

/** A window closing this soon is closed: the settlement engine wants validBefore at least this far ahead (as /verify). */
const WINDOW_CLOSING_SECONDS = 6n;
/**
 * A charge asked this little before its period opens here is the ledger's clock running ahead of ours (skew between
 * hosts, or a development clock that follows the chain a moment later): it is retried by the queue, not refused, which
 * would start dunning for a period nobody has failed to pay.
 */
const CLOCK_SKEW_TOLERANCE_MS = 5 * 60_000;

/** Thrown for a charge whose window opens within CLOCK_SKEW_TOLERANCE_MS: BullMQ tries the command again later. */
export class WindowOpensSoonError extends Error {
  override readonly name = 'WindowOpensSoonError';
}

/** What a command came to, for logs and tests. */
export type CommandOutcome =
  | 'charged'
  | `refused:${ChargeRefusal}`
  | 'done'
  | 'canceled'
  | 'not_found'
  | `refund:${'executed' | 'pending' | 'failed' | 'denied'}`
  | 'refund:no_paid_charge';

type ChargeCommand = Extract<SubscriptionCommand, { type: 'charge' }>;
type CancelCommand = Extract<SubscriptionCommand, { type: 'cancel' }>;
type RefundCommand = Extract<SubscriptionCommand, { type: 'refund' }>;

/**
 * The facilitator's side of the `subscription-commands` contract: a `charge` is carried out at most once per
 * (subscription, period, attempt) and never for a period that is paid, outside its window, past expiry or a cancel, or
 * once the grant is revoked; a `cancel` destroys what renewing would need; a `refund` gives back part of a paid period. The ledger decides which period is due;
 * this decides only whether the instrument may pay it now. Outcomes go through the outbox; a charge's settlement is
 * started and not waited for, so renewals due at once flow into the settlement engine's batches.
 */
@Injectable()
export class SubscriptionCommandsService {
  private readonly logger = new Logger(SubscriptionCommandsService.name);
  private readonly rails: Map<string, SubscriptionRail>;

  constructor(
    private readonly subscriptions: Subscriptions,
    @Inject(SUBSCRIPTION_RAILS) rails: SubscriptionRail[],
    private readonly clock: Clock,
    private readonly refunds: RefundsService,
  ) {
    this.rails = new Map(rails.map((r) => [r.method, r]));
  }

  async run(command: SubscriptionCommand): Promise<CommandOutcome> {
    switch (command.type) {
      case 'charge': {
        const [outcome] = await this.chargeMany([command]);
        if (outcome instanceof Error) throw outcome;
        return outcome!;
      }
      case 'cancel':
        return this.cancel(command);
      case 'refund':
        return this.refund(command);
    }
  }

  /**
   * Charge commands together (renewals come due in batches; the worker gathers those that run at once): the reads in
   * bulk, the rail's checks in as few round trips as it allows, every charge in one transaction, the starts in one
   * enqueue. Each command still answers on its own: its outcome, or the error its job fails with (and is retried on).
   */
  async chargeMany(commands: readonly ChargeCommand[]): Promise<(CommandOutcome | Error)[]> {
    const results: (CommandOutcome | Error)[] = [];
    const keys = commands.map((c) => ({ subscriptionId: c.subscriptionId, periodIndex: c.periodIndex, attempt: c.attempt, commandId: c.commandId }));
    const [subscriptions, done, facts] = await Promise.all([
      this.subscriptions.findMany(commands.map((c) => c.subscriptionId)),
      this.subscriptions.doneCharges(keys),
      this.subscriptions.chargeFacts(keys),
    ]);
    const due = new Map<SubscriptionRail, { n: number; request: ChargeRequest; key: ChargeCommandKey }[]>();
    const seen = new Set<string>();
    for (const [n, command] of commands.entries()) {
      const subscription = this.owned(command, subscriptions.get(command.subscriptionId));
      const key = keys[n]!;
      if (!subscription) results[n] = 'not_found';
      // the same command twice in one batch (published again while its first job runs): carried out once
      else if (done.has(command.commandId) || seen.has(command.commandId)) results[n] = 'done';
      else {
        const refusal = this.refusal(subscription, command.periodIndex, facts);
        const rail = this.rails.get(subscription.method);
        if (refusal?.opensAt && refusal.opensAt.getTime() - this.clock.nowMs() <= CLOCK_SKEW_TOLERANCE_MS)
          results[n] = new WindowOpensSoonError(`charge ${command.commandId}: ${refusal.message}, within the clock skew tolerated; tried again`);
        else if (refusal) results[n] = await this.refuse(subscription, key, refusal.reason, refusal.message).catch(asError);
        else if (!rail)
          results[n] = await this.refuse(subscription, key, 'rail_error', `method ${subscription.method} has no subscription rail here`).catch(asError);
        else {
          seen.add(command.commandId);
          const authorization = facts.authorizations.get(periodKey(subscription.id, command.periodIndex));
          const request = { subscription, periodIndex: command.periodIndex, attempt: command.attempt, ...(authorization && { authorization }) };
          due.set(rail, [...(due.get(rail) ?? []), { n, request, key }]);
        }
      }
    }
    for (const [rail, batch] of due) await this.chargeThrough(rail, batch, results);
    return results;
  }

  /** One rail's share of a batch: prepared together, recorded in one transaction, started together. */
  private async chargeThrough(
    rail: SubscriptionRail,
    batch: { n: number; request: ChargeRequest; key: ChargeCommandKey }[],
    results: (CommandOutcome | Error)[],
  ): Promise<void> {
    let prepared: ChargePreparation[];
    try {
      prepared = rail.prepareCharges
        ? await rail.prepareCharges(batch.map((b) => b.request))
        : await Promise.all(batch.map(({ request: r }) => rail.prepareCharge(r.subscription, r.periodIndex, r.attempt)));
    } catch (error) {
      for (const { n } of batch) results[n] = asError(error);
      return;
    }
    const ready: { n: number; request: ChargeRequest; item: ChargeItem }[] = [];
    for (const [k, { n, request, key }] of batch.entries()) {
      const preparation = prepared[k]!;
      if (preparation.ok) {
        ready.push({ n, request, item: { key, payment: preparation.payment } });
        continue;
      }
      try {
        if (preparation.revoked)
          await this.subscriptions.revoke(request.subscription.id, { reason: 'authorization_canceled', ...preparation.revoked }, new Date(this.clock.nowMs()));
        results[n] = await this.refuse(request.subscription, key, preparation.reason, preparation.message);
      } catch (error) {
        results[n] = asError(error);
      }
    }
    if (ready.length === 0) return;
    let outcomes: ChargeOutcome[];
    try {
      outcomes = await this.subscriptions.chargeMany(
        ready.map((r) => r.item),
        async (locked, tx) => {
          const facts = await this.subscriptions.chargeFacts(
            ready.map((r) => r.item.key),
            tx,
          );
          return ready.map(({ item }) => {
            const subscription = locked.get(item.key.subscriptionId);
            return subscription && this.refusal(subscription, item.key.periodIndex, facts);
          });
        },
      );
    } catch (error) {
      for (const { n } of ready) results[n] = asError(error);
      return;
    }
    const charged: { n: number; paymentId: string }[] = [];
    for (const [k, { n }] of ready.entries()) {
      const outcome = outcomes[k]!;
      results[n] = outcome.kind === 'charged' ? 'charged' : outcome.kind === 'refused' ? `refused:${outcome.reason}` : 'done';
      if (outcome.kind === 'charged') charged.push({ n, paymentId: outcome.paymentId });
    }
    // Recorded: the settlement engine's recovery sweep sends them even if this enqueue is lost. A start that fails fails
    // its job, which is retried (and finds its charge done).
    if (rail.startCharges) {
      await rail.startCharges(charged.map((c) => c.paymentId)).catch((error: unknown) => charged.forEach(({ n }) => (results[n] = asError(error))));
      return;
    }
    const started = await Promise.allSettled(charged.map((c) => rail.startCharge(c.paymentId)));
    started.forEach((s, i) => s.status === 'rejected' && (results[charged[i]!.n] = asError(s.reason)));
  }

  private async cancel(command: CancelCommand): Promise<CommandOutcome> {
    const subscription = await this.find(command);
    if (!subscription) return 'not_found';
    const effectiveAt = new Date(command.effectiveAt);
    // the rail first (Stripe stops renewing): a failure throws, and the command is tried again
    await this.rails.get(subscription.method)?.cancel?.(subscription, { commandId: command.commandId, at: command.at, effectiveAt });
    const done = await this.subscriptions.cancel(subscription.id, { commandId: command.commandId, at: command.at, effectiveAt }, new Date(this.clock.nowMs()));
    return done ? 'canceled' : 'done';
  }

  /**
   * Refunds period N's charge as the merchant would with POST /refunds, under the command id as idempotency key: a
   * command published again answers the same refund and moves nothing more. Its outcome reaches the ledger as the
   * refund's payment.refunded / payment.refund_failed (on the charge's payment, which carries `subscription`). A denial
   * (no refund wallet, nothing left to refund) is a payment.refund_failed with failureReason `denied:<reason>`.
   */
  private async refund(command: RefundCommand): Promise<CommandOutcome> {
    const subscription = await this.find(command);
    if (!subscription) return 'not_found';
    const charge = await this.subscriptions.paidCharge(subscription.id, command.periodIndex);
    if (!charge) {
      this.logger.warn(`refund command ${command.commandId}: period ${command.periodIndex} has no confirmed charge to refund; dropped`);
      return 'refund:no_paid_charge';
    }
    const known = (REFUND_REASONS as readonly string[]).includes(command.reason);
    const request: CreateRefundDto = {
      x402Version: 2,
      paymentReference: { network: charge.network, paymentId: charge.id, ...(charge.txHash && { txHash: charge.txHash }) },
      amount: command.amount,
      reason: known ? (command.reason as RefundReason) : 'customer_request',
      reasonDetail: `subscription ${subscription.id} period ${command.periodIndex}: ${command.reason}`,
      idempotencyKey: command.commandId,
    };
    // a denial reaches the ledger as payment.refund_failed, once (written with the denied refund), so it stops waiting
    const refund = await this.refunds.create(command.merchantId, request, { announceDenial: true });
    if (refund.status === 'denied') this.logger.warn(`refund command ${command.commandId}: denied (${refund.denialReason}); the ledger is told it failed`);
    return `refund:${refund.status}`;
  }

  /**
   * The subscription the command names, if it is the commanding merchant's. Without one there is no payment to write a
   * charge_refused on (the subscription's events live on its period 0 payment), so it is logged and dropped.
   */
  private owned(command: SubscriptionCommand, subscription: SubscriptionRecord | undefined): SubscriptionRecord | undefined {
    if (subscription && subscription.merchantId === command.merchantId) return subscription;
    this.logger.warn(`subscription command ${command.commandId}: no subscription ${command.subscriptionId} of merchant ${command.merchantId}; dropped`);
    return undefined;
  }

  private async find(command: SubscriptionCommand): Promise<SubscriptionRecord | undefined> {
    return this.owned(command, await this.subscriptions.find(command.subscriptionId));
  }

  /** Why period N may not be charged now, checked in the order the reasons outrank each other; undefined: it may. */
  private refusal(
    subscription: SubscriptionRecord,
    periodIndex: number,
    facts: ChargeFacts,
  ): { reason: ChargeRefusal; message: string; opensAt?: Date } | undefined {
    if (subscription.state === 'revoked') return { reason: 'revoked', message: 'the payer withdrew the grant' };
    if (subscription.state === 'canceled') return { reason: 'canceled', message: 'the subscription is canceled' };
    const { start, end } = periodAt(subscription.anchor, { unit: subscription.periodUnit, count: subscription.periodCount }, periodIndex);
    if (subscription.expiresAt && start.getTime() >= subscription.expiresAt.getTime())
      return {
        reason: 'expired',
        message: `period ${periodIndex} starts ${start.toISOString()}, at or after subscriptionExpires ${subscription.expiresAt.toISOString()}`,
      };
    if (subscription.cancelAt && start.getTime() >= subscription.cancelAt.getTime())
      return { reason: 'canceled', message: `period ${periodIndex} starts at or after the cancel effective ${subscription.cancelAt.toISOString()}` };
    const now = this.clock.nowSeconds();
    const startSeconds = BigInt(start.getTime() / 1000);
    const endSeconds = BigInt(end.getTime() / 1000);
    if (now < startSeconds) return { reason: 'window_not_open', message: `period ${periodIndex} opens at ${start.toISOString()}`, opensAt: start };
    if (now + WINDOW_CLOSING_SECONDS >= endSeconds) return { reason: 'window_closed', message: `period ${periodIndex} closed at ${end.toISOString()}` };
    // evm pays each period with its stored authorization; Stripe Billing needs none of ours. The facts are read in bulk,
    // inside the charge's transaction when rechecked there (on its own connection: a second one from the pool while
    // holding this one starves the pool when every connection is a charge waiting for another).
    const period = periodKey(subscription.id, periodIndex);
    if (subscription.method === EVM_METHOD && !facts.authorizations.get(period)?.sealed)
      return { reason: 'no_authorization', message: `no authorization is stored for period ${periodIndex}` };
    if (facts.paidOrInFlight.has(period)) return { reason: 'already_paid', message: `period ${periodIndex} is paid or being paid` };
    return undefined;
  }

  private async refuse(subscription: SubscriptionRecord, key: ChargeCommandKey, reason: ChargeRefusal, message: string): Promise<CommandOutcome> {
    const written = await this.subscriptions.refuse(subscription, key, reason, message);
    return written ? `refused:${reason}` : 'done';
  }
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
