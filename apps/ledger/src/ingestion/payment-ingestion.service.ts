import { Inject, Injectable, Logger } from '@nestjs/common';
import type Stripe from 'stripe';
import type { PaymentEventMessage } from '@mp/clients';
import { isSuccess, TRANSFER_RESULT_MESSAGES, type AccountInput, type TransferInput, type TransferResult, type TransferResultCode } from '@mp/ledger';
import { LedgerService } from '../core/ledger.service';
import { LEDGER_CONFIG, type LedgerConfig } from '../ledger.config';
import { createStripeReader, stripeFeeOf } from '../stripe/stripe-reader';
import { KnownRecords } from './known-records';
import {
  bookingStep,
  type BookingStep,
  feeAccount,
  feeTransfer,
  gasAccounts,
  gasTransfer,
  holdTransfer,
  latePaymentTransfer,
  paymentAccounts,
  paymentAsset,
  postTransfer,
  refundTransfer,
  voidTransfer,
} from './payment-booking';

/** A booking the ledger refused for a reason a retry cannot change: the job fails for an operator to look at. */
export class BookingRefusedError extends Error {}

export type BookingOutcome = 'booked' | 'skipped';

/** What became of each event of a batch, in its order: booked or skipped, or the ledger's refusal of it. */
export type BatchBookingOutcome = BookingOutcome | BookingRefusedError;

/** An event of a batch, planned for its merchant's shared calls. */
interface PlannedBooking {
  index: number;
  event: PaymentEventMessage;
  asset: string;
  step: Exclude<BookingStep, { kind: 'none' }>;
  hold: TransferInput;
  /** the post, void or refund */
  resolution?: TransferInput;
  gas?: TransferInput;
}

/** Accounts and receiving addresses remembered as written, per process (see KnownRecords). */
const KNOWN_RECORDS_MAX = 10_000;
/** Holds remembered as booked: enough for the payments between their verification and their outcome in a burst. */
const KNOWN_HOLDS_MAX = 50_000;

/**
 * Books the facilitator's payment events in the merchant's ledger (see payment-booking.ts). The hold is (re)created
 * before it is posted or voided; the post, void or refund and the gas then go in one create_transfers call. Every id
 * is derived from the payment, so events may arrive twice or out of order: the ledger ends the same.
 */
@Injectable()
export class PaymentIngestion {
  private readonly logger = new Logger('Ingestion');
  /** with STRIPE_SECRET_KEY: Stripe's fee on each Stripe payment is booked too */
  private readonly stripe: Stripe | undefined;
  /**
   * Accounts (keyed by their whole definition) answered `created` or `exists`, and receiving addresses remembered:
   * neither is ever deleted or changed (the book is append-only; only a reset of the whole database, done before the
   * apps start, removes them), so asking again would answer `exists` and change nothing. A refusal is never kept,
   * and an account asked for with another definition is another key: it is asked for, and refused as before.
   */
  private readonly knownAccounts = new KnownRecords(KNOWN_RECORDS_MAX);
  private readonly knownAddresses = new KnownRecords(KNOWN_RECORDS_MAX);
  /**
   * Holds (keyed by their whole definition) answered `created` or `exists`: transfers are never changed or deleted,
   * so submitting one again would answer `exists`. A post or void after a hold known here skips that round trip.
   */
  private readonly knownHolds = new KnownRecords(KNOWN_HOLDS_MAX);

  constructor(
    @Inject(LEDGER_CONFIG) config: LedgerConfig,
    private readonly ledger: LedgerService,
  ) {
    if (config.reconciliation.stripe) this.stripe = createStripeReader(config.reconciliation.stripe, 'ingestion');
  }

  async book(event: PaymentEventMessage): Promise<BookingOutcome> {
    const planned = planBooking(event, 0);
    // open mode: a payment no merchant's key claimed belongs to no merchant's book
    if (!planned) return 'skipped';
    const { merchantId, plan } = planned;
    await this.ensureAccounts(merchantId, accountsOf(plan));
    if (event.payment.rail === 'evm') await this.rememberReceivingAddress(merchantId, event.payment.network, event.payment.payTo);

    const rest = [...(plan.resolution ? [plan.resolution] : []), ...(plan.gas ? [plan.gas] : [])];
    // The hold first, in a call of its own unless this process booked the very same hold already: nothing after it
    // is booked when it is refused. Then the rest in one call, in order.
    const holdKey = transferKey(merchantId, plan.hold);
    if (!this.knownHolds.has(holdKey)) {
      await this.transfer(merchantId, plan.hold);
      this.knownHolds.add(holdKey);
    }
    const results = rest.length ? await this.ledger.createTransfers(merchantId, rest) : [];
    await this.accepted(merchantId, event, plan.asset, plan.step, plan.resolution, plan.resolution && results[0]);
    if (plan.gas) this.accept(merchantId, plan.gas, results[rest.length - 1]!);
    return 'booked';
  }

  /**
   * Books a batch's events with few round trips: per merchant, the accounts and receiving addresses of all its events
   * (those not known yet), the holds not known yet in one create_transfers call, then every post, void, refund and
   * gas in one more, each result accepted as book() accepts it. A payment's events keep their order: every hold before
   * any post or void. A payment with more than one post or void in the batch (a reorg, a late confirmation), or anything
   * else unusual (an account refused), is booked event by event through book(), in order.
   *
   * An event the ledger refuses is answered with its BookingRefusedError and the rest are booked; any other failure
   * (the database away) rejects the whole batch, to be retried: what was booked answers `exists` then.
   */
  async bookMany(events: readonly PaymentEventMessage[]): Promise<BatchBookingOutcome[]> {
    const outcomes: BatchBookingOutcome[] = events.map(() => 'skipped');
    const planned = new Map<string, PlannedBooking[]>();
    const alone = new Set<string>();
    const byPayment = new Map<string, PlannedBooking[]>();
    events.forEach((event, index) => {
      const planned = planBooking(event, index);
      if (!planned) return;
      const { merchantId, plan } = planned;
      const payment = JSON.stringify([merchantId, event.paymentId.toLowerCase()]);
      byPayment.set(payment, [...(byPayment.get(payment) ?? []), plan]);
    });
    for (const [payment, plans] of byPayment) {
      const [merchantId] = JSON.parse(payment) as [string];
      if (isUsual(merchantId, plans)) planned.set(merchantId, [...(planned.get(merchantId) ?? []), ...plans]);
      else alone.add(payment);
    }
    // merchants at once: the transfer writer shares their calls' transactions
    await Promise.all([...planned].map(([merchantId, plans]) => this.bookForMerchant(merchantId, plans, outcomes)));
    for (const payment of alone) for (const { index, event } of byPayment.get(payment)!) outcomes[index] = await refusalOr(() => this.book(event));
    return outcomes;
  }

  /** One merchant's planned events of a batch (see bookMany); outcomes written by index. */
  private async bookForMerchant(merchantId: string, plans: PlannedBooking[], outcomes: BatchBookingOutcome[]): Promise<void> {
    const accounts = new Map<string, AccountInput>();
    for (const plan of plans) for (const a of accountsOf(plan)) accounts.set(accountKey(merchantId, a), a);
    const refusedAccount = await refusalOr(() => this.ensureAccounts(merchantId, [...accounts.values()]));
    if (refusedAccount instanceof BookingRefusedError) {
      // which events need the refused account: each one's own book() says
      for (const { index, event } of plans) outcomes[index] = await refusalOr(() => this.book(event));
      return;
    }
    for (const { event } of plans)
      if (event.payment.rail === 'evm') await this.rememberReceivingAddress(merchantId, event.payment.network, event.payment.payTo);

    // the holds this process has not booked yet, each once, in one call; a refused hold refuses its payment's events
    const holds = new Map<string, TransferInput>();
    for (const { hold } of plans) {
      const key = transferKey(merchantId, hold);
      if (!this.knownHolds.has(key)) holds.set(key, hold);
    }
    const holdResults = holds.size ? await this.ledger.createTransfers(merchantId, [...holds.values()]) : [];
    const refusedHolds = new Map<string, BookingRefusedError>();
    [...holds].forEach(([key, hold], i) => {
      const refused = refusalOrSync(() => this.accept(merchantId, hold, holdResults[i]));
      if (refused instanceof BookingRefusedError) refusedHolds.set(key, refused);
      else this.knownHolds.add(key);
    });

    // then every post, void, refund and gas of the events whose hold stands, in one call, in order
    const booking = plans.filter((p) => {
      const refused = refusedHolds.get(transferKey(merchantId, p.hold));
      if (refused) outcomes[p.index] = refused;
      return !refused;
    });
    const rest = booking.flatMap((p) => [...(p.resolution ? [p.resolution] : []), ...(p.gas ? [p.gas] : [])]);
    const results = rest.length ? await this.ledger.createTransfers(merchantId, rest) : [];
    let next = 0;
    for (const plan of booking) {
      const resolved = plan.resolution && results[next++];
      const gasResult = plan.gas && results[next++];
      outcomes[plan.index] = await refusalOr(async () => {
        await this.accepted(merchantId, plan.event, plan.asset, plan.step, plan.resolution, resolved);
        if (plan.gas) this.accept(merchantId, plan.gas, gasResult!);
        return 'booked' as const;
      });
    }
  }

  /** A post, void or refund's result accepted as book() accepts it, and what follows it (a late payment, Stripe's fee). */
  private async accepted(
    merchantId: string,
    event: PaymentEventMessage,
    asset: string,
    step: PlannedBooking['step'],
    resolution: TransferInput | undefined,
    result: TransferResult | undefined,
  ): Promise<void> {
    if (step.kind === 'post') {
      const posted = this.accept(merchantId, resolution!, result!, ['pending_transfer_already_voided']);
      if (posted === 'pending_transfer_already_voided') await this.transfer(merchantId, latePaymentTransfer(event, asset, step.reference));
      if (event.payment.rail === 'stripe' && step.reference?.startsWith('pi_')) await this.bookStripeFee(merchantId, event, asset, step.reference);
    } else if (step.kind === 'void') {
      const voided = this.accept(merchantId, resolution!, result!, ['pending_transfer_already_posted']);
      if (voided === 'pending_transfer_already_posted')
        this.logger.warn(`payment ${event.paymentId}: ${event.type} after it was confirmed; the ledger keeps it posted`);
    } else if (step.kind === 'refund') {
      this.accept(merchantId, resolution!, result!);
    }
  }

  /** A failure to read the fee fails the job, which BullMQ retries: what was booked before it answers `exists` then. */
  private async bookStripeFee(merchantId: string, event: PaymentEventMessage, asset: string, paymentIntent: string): Promise<void> {
    if (!this.stripe) return;
    const fee = await stripeFeeOf(this.stripe, paymentIntent);
    if (!fee || fee.amount <= 0n) return;
    await this.ensureAccounts(merchantId, [feeAccount(asset)]);
    await this.transfer(merchantId, feeTransfer(event, asset, fee.amount, fee.balanceTransaction));
  }

  /** Creates the accounts not known to exist yet; any answer but `created` or `exists` is refused. */
  private async ensureAccounts(merchantId: string, accounts: AccountInput[]): Promise<void> {
    const unknown = accounts.filter((a) => !this.knownAccounts.has(accountKey(merchantId, a)));
    if (!unknown.length) return;
    const results = await this.ledger.createAccounts(merchantId, unknown);
    results.forEach((r, i) => {
      if (r.result !== 'created' && r.result !== 'exists') throw new BookingRefusedError(`account ${unknown[i].id} of merchant ${merchantId}: ${r.result}`);
    });
    for (const a of unknown) this.knownAccounts.add(accountKey(merchantId, a));
  }

  private async rememberReceivingAddress(merchantId: string, network: string, address: string): Promise<void> {
    const key = JSON.stringify([merchantId, network, address.toLowerCase()]);
    if (this.knownAddresses.has(key)) return;
    await this.ledger.rememberReceivingAddress(merchantId, network, address);
    this.knownAddresses.add(key);
  }

  /** One transfer in a call of its own. */
  private async transfer(merchantId: string, transfer: TransferInput, expected: TransferResultCode[] = []): Promise<TransferResultCode> {
    const [result] = await this.ledger.createTransfers(merchantId, [transfer]);
    return this.accept(merchantId, transfer, result, expected);
  }

  /** The result when it is a success or one of `expected`; anything else is refused. */
  private accept(
    merchantId: string,
    transfer: TransferInput,
    { result, firstResult }: TransferResult,
    expected: TransferResultCode[] = [],
  ): TransferResultCode {
    if (isSuccess(result) || expected.includes(result)) return result;
    const code = firstResult ?? result;
    throw new BookingRefusedError(`transfer ${transfer.id} of merchant ${merchantId}: ${code} (${TRANSFER_RESULT_MESSAGES[code]})`);
  }
}

/**
 * Whether a payment's events in a batch can share their merchant's calls: at most one post or void (two would resolve
 * one hold twice in one call), one hold definition, and no transfer id twice.
 */
function isUsual(merchantId: string, plans: PlannedBooking[]): boolean {
  if (plans.filter((p) => p.step.kind === 'post' || p.step.kind === 'void').length > 1) return false;
  if (new Set(plans.map((p) => transferKey(merchantId, p.hold))).size > 1) return false;
  const ids = plans.flatMap((p) => [p.resolution?.id, p.gas?.id]).filter((id) => id !== undefined);
  return new Set(ids).size === ids.length;
}

/** The value, or the ledger's refusal; any other failure is thrown on. */
async function refusalOr<T>(fn: () => Promise<T>): Promise<T | BookingRefusedError> {
  try {
    return await fn();
  } catch (error) {
    if (error instanceof BookingRefusedError) return error;
    throw error;
  }
}

function refusalOrSync<T>(fn: () => T): T | BookingRefusedError {
  try {
    return fn();
  } catch (error) {
    if (error instanceof BookingRefusedError) return error;
    throw error;
  }
}

/** A transfer's whole definition: the same key means an identical transfer. */
function transferKey(merchantId: string, t: TransferInput): string {
  return JSON.stringify([
    merchantId,
    t.id,
    t.debitAccountId,
    t.creditAccountId,
    t.amount?.toString(),
    t.pendingId,
    t.asset,
    t.code,
    t.flags,
    t.timeout,
    t.reference,
  ]);
}

/** An account's whole definition: the same key means an identical account. */
function accountKey(merchantId: string, a: AccountInput): string {
  return JSON.stringify([merchantId, a.id, a.asset, a.code, a.flags, a.normalBalance, a.reference]);
}

/** What booking the event takes (its merchant and transfers), or undefined when it books nothing (see bookingStep). */
function planBooking(event: PaymentEventMessage, index: number): { merchantId: string; plan: PlannedBooking } | undefined {
  const merchantId = event.merchantId ?? event.payment.merchantId;
  const step = bookingStep(event);
  if (!merchantId || step.kind === 'none') return undefined;
  const asset = paymentAsset(event);
  const gas = step.kind === 'post' || step.kind === 'void' ? step.gas : undefined;
  const resolution =
    step.kind === 'post'
      ? postTransfer(event, step.reference)
      : step.kind === 'void'
        ? voidTransfer(event)
        : step.kind === 'refund'
          ? refundTransfer(event, asset, step.refund)
          : undefined;
  return { merchantId, plan: { index, event, asset, step, hold: holdTransfer(event, asset), resolution, gas: gas && gasTransfer(event, gas) } };
}

/** The accounts a planned booking writes to. */
function accountsOf({ asset, step }: PlannedBooking): AccountInput[] {
  const gas = step.kind === 'post' || step.kind === 'void' ? step.gas : undefined;
  return gas ? [...paymentAccounts(asset), ...gasAccounts(gas.asset)] : paymentAccounts(asset);
}
