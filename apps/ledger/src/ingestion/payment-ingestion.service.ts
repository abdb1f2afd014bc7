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
    const merchantId = event.merchantId ?? event.payment.merchantId;
    const step = bookingStep(event);
    // open mode: a payment no merchant's key claimed belongs to no merchant's book
    if (!merchantId || step.kind === 'none') return 'skipped';
    const asset = paymentAsset(event);
    const gas = step.kind === 'post' || step.kind === 'void' ? step.gas : undefined;
    await this.ensureAccounts(merchantId, gas ? [...paymentAccounts(asset), ...gasAccounts(gas.asset)] : paymentAccounts(asset));
    if (event.payment.rail === 'evm') await this.rememberReceivingAddress(merchantId, event.payment.network, event.payment.payTo);

    const hold = holdTransfer(event, asset);
    const resolution =
      step.kind === 'post'
        ? postTransfer(event, step.reference)
        : step.kind === 'void'
          ? voidTransfer(event)
          : step.kind === 'refund'
            ? refundTransfer(event, asset, step.refund)
            : undefined;
    const gasBooking = gas && gasTransfer(event, gas);
    const rest = [...(resolution ? [resolution] : []), ...(gasBooking ? [gasBooking] : [])];
    // The hold first, in a call of its own unless this process booked the very same hold already: nothing after it
    // is booked when it is refused. Then the rest in one call, in order.
    const holdKey = transferKey(merchantId, hold);
    if (!this.knownHolds.has(holdKey)) {
      await this.transfer(merchantId, hold);
      this.knownHolds.add(holdKey);
    }
    const results = rest.length ? await this.ledger.createTransfers(merchantId, rest) : [];
    if (step.kind === 'post') {
      const posted = this.accept(merchantId, resolution!, results[0], ['pending_transfer_already_voided']);
      if (posted === 'pending_transfer_already_voided') await this.transfer(merchantId, latePaymentTransfer(event, asset, step.reference));
    } else if (step.kind === 'void') {
      const voided = this.accept(merchantId, resolution!, results[0], ['pending_transfer_already_posted']);
      if (voided === 'pending_transfer_already_posted')
        this.logger.warn(`payment ${event.paymentId}: ${event.type} after it was confirmed; the ledger keeps it posted`);
    } else if (step.kind === 'refund') {
      this.accept(merchantId, resolution!, results[0]);
    }
    if (gasBooking) this.accept(merchantId, gasBooking, results[rest.length - 1]);
    if (step.kind === 'post' && event.payment.rail === 'stripe' && step.reference?.startsWith('pi_'))
      await this.bookStripeFee(merchantId, event, asset, step.reference);
    return 'booked';
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
