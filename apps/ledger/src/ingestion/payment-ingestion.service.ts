import { Inject, Injectable, Logger } from '@nestjs/common';
import type Stripe from 'stripe';
import type { PaymentEventMessage } from '@mp/clients';
import { isSuccess, TRANSFER_RESULT_MESSAGES, type AccountInput, type TransferInput, type TransferResultCode } from '@mp/ledger';
import { LedgerService } from '../core/ledger.service';
import { LEDGER_CONFIG, type LedgerConfig } from '../ledger.config';
import { createStripeReader, stripeFeeOf } from '../stripe/stripe-reader';
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
  type GasBooking,
} from './payment-booking';

/** A booking the ledger refused for a reason a retry cannot change: the job fails for an operator to look at. */
export class BookingRefusedError extends Error {}

export type BookingOutcome = 'booked' | 'skipped';

/**
 * Books the facilitator's payment events in the merchant's ledger (see payment-booking.ts). Each step is one
 * create_transfers call with an id derived from the payment, and the hold is (re)created before it is posted or
 * voided, so events may arrive twice or out of order: the ledger ends the same.
 */
@Injectable()
export class PaymentIngestion {
  private readonly logger = new Logger('Ingestion');
  /** with STRIPE_SECRET_KEY: Stripe's fee on each Stripe payment is booked too */
  private readonly stripe: Stripe | undefined;

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
    await this.ensureAccounts(merchantId, paymentAccounts(asset));
    if (event.payment.rail === 'evm') await this.ledger.rememberReceivingAddress(merchantId, event.payment.network, event.payment.payTo);
    await this.transfer(merchantId, holdTransfer(event, asset));
    if (step.kind === 'post') {
      const posted = await this.transfer(merchantId, postTransfer(event, step.reference), ['pending_transfer_already_voided']);
      if (posted === 'pending_transfer_already_voided') await this.transfer(merchantId, latePaymentTransfer(event, asset, step.reference));
      if (event.payment.rail === 'stripe' && step.reference?.startsWith('pi_')) await this.bookStripeFee(merchantId, event, asset, step.reference);
    } else if (step.kind === 'void') {
      const voided = await this.transfer(merchantId, voidTransfer(event), ['pending_transfer_already_posted']);
      if (voided === 'pending_transfer_already_posted')
        this.logger.warn(`payment ${event.paymentId}: ${event.type} after it was confirmed; the ledger keeps it posted`);
    } else if (step.kind === 'refund') {
      await this.transfer(merchantId, refundTransfer(event, asset, step.refund));
    }
    if ((step.kind === 'post' || step.kind === 'void') && step.gas) await this.bookGas(merchantId, event, step.gas);
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

  private async bookGas(merchantId: string, event: PaymentEventMessage, gas: GasBooking): Promise<void> {
    await this.ensureAccounts(merchantId, gasAccounts(gas.asset));
    await this.transfer(merchantId, gasTransfer(event, gas));
  }

  private async ensureAccounts(merchantId: string, accounts: AccountInput[]): Promise<void> {
    const results = await this.ledger.createAccounts(merchantId, accounts);
    results.forEach((r, i) => {
      if (r.result !== 'created' && r.result !== 'exists') throw new BookingRefusedError(`account ${accounts[i].id} of merchant ${merchantId}: ${r.result}`);
    });
  }

  /** The result when it is a success or one of `expected`; anything else is refused. */
  private async transfer(merchantId: string, transfer: TransferInput, expected: TransferResultCode[] = []): Promise<TransferResultCode> {
    const [{ result, firstResult }] = await this.ledger.createTransfers(merchantId, [transfer]);
    if (isSuccess(result) || expected.includes(result)) return result;
    const code = firstResult ?? result;
    throw new BookingRefusedError(`transfer ${transfer.id} of merchant ${merchantId}: ${code} (${TRANSFER_RESULT_MESSAGES[code]})`);
  }
}
