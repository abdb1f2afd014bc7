import type { PaymentEventMessage } from '@mp/clients';
import { chartAccount, chartAccountId, nativeAsset, paymentTransferId, TransferCode, TransferFlag, type AccountInput, type TransferInput } from '@mp/ledger';

/**
 * How one facilitator payment is booked, as plain data: the event decides the step, the payment the accounts and
 * amounts. A payment's money moves from the payers' clearing account to the merchant's revenue in its asset: a
 * pending transfer when it is verified, posted when it is confirmed, voided when it fails or expires; each refund
 * moves its amount back as a transfer of its own. Every id is
 * derived from the payment, so a redelivered event books nothing new.
 */
export type BookingStep =
  /** nothing to book (submitted, replaced, resend, retried) */
  | { kind: 'none' }
  /** verified: hold the amount */
  | { kind: 'hold' }
  /** confirmed: post the hold; after a void (a failed payment that later settled), book it directly instead */
  | { kind: 'post'; reference: string | undefined; gas?: GasBooking }
  /** failed or expired: release the hold */
  | { kind: 'void'; gas?: GasBooking }
  /** refunded: (part of) the payment back from the merchant's revenue to the payers' clearing account, once per refund */
  | { kind: 'refund'; refund: RefundBooking };

export interface RefundBooking {
  refundId: string;
  amount: bigint;
  /** the refund's transaction hash (lowercase), or the Stripe refund `re_…` */
  reference: string;
}

export interface GasBooking {
  asset: string;
  amount: bigint;
  reference: string;
}

export function bookingStep(event: PaymentEventMessage): BookingStep {
  const gas = gasOf(event);
  switch (event.type) {
    case 'payment.verified':
      return { kind: 'hold' };
    case 'payment.confirmed':
      return { kind: 'post', reference: settlementReference(event), ...(gas && { gas }) };
    case 'payment.failed':
    case 'payment.expired':
      return { kind: 'void', ...(gas && { gas }) };
    case 'payment.refunded': {
      const { refundId, amount, reference } = event.data;
      return {
        kind: 'refund',
        refund: { refundId, amount: BigInt(amount), reference: /^0x[0-9a-fA-F]{64}$/.test(reference) ? reference.toLowerCase() : reference },
      };
    }
    default:
      return { kind: 'none' };
  }
}

/** The ledger asset of the payment: `eip155:8453/0x…` on chain, `stripe/usd` through Stripe. */
export function paymentAsset(event: PaymentEventMessage): string {
  const { rail, network, asset } = event.payment;
  return rail === 'stripe' ? `stripe/${asset.toLowerCase()}` : `${network}/${asset.toLowerCase()}`;
}

export function paymentAccounts(asset: string): AccountInput[] {
  return [chartAccount('payerClearing', asset, 'debit'), chartAccount('revenue', asset, 'credit')];
}

export function gasAccounts(asset: string): AccountInput[] {
  return [chartAccount('gasExpense', asset, 'debit'), chartAccount('gasFunding', asset, 'credit')];
}

/** The hold, the same whichever event books it first. */
export function holdTransfer(event: PaymentEventMessage, asset: string): TransferInput {
  return {
    id: paymentTransferId(event.paymentId, 'pending'),
    debitAccountId: chartAccountId('payerClearing', asset),
    creditAccountId: chartAccountId('revenue', asset),
    amount: BigInt(event.payment.amount),
    asset,
    code: TransferCode.payment,
    flags: TransferFlag.pending,
    // what names the payment before it settles: the MPP challenge, else the facilitator's payment id
    reference: event.payment.challengeId ?? event.paymentId,
  };
}

export function postTransfer(event: PaymentEventMessage, reference: string | undefined): TransferInput {
  return {
    id: paymentTransferId(event.paymentId, 'post'),
    pendingId: paymentTransferId(event.paymentId, 'pending'),
    flags: TransferFlag.post_pending_transfer,
    ...(reference && { reference }),
  };
}

export function voidTransfer(event: PaymentEventMessage): TransferInput {
  return {
    id: paymentTransferId(event.paymentId, 'void'),
    pendingId: paymentTransferId(event.paymentId, 'pending'),
    flags: TransferFlag.void_pending_transfer,
  };
}

/** A payment confirmed after its hold was voided: booked as a plain payment. */
export function latePaymentTransfer(event: PaymentEventMessage, asset: string, reference: string | undefined): TransferInput {
  return { ...holdTransfer(event, asset), id: paymentTransferId(event.paymentId, 'late'), flags: 0, ...(reference && { reference }) };
}

export function feeAccount(asset: string): AccountInput {
  return chartAccount('processorFees', asset, 'credit');
}

/** The processor's fee on the payment, out of the merchant's revenue, named by the balance transaction. */
export function feeTransfer(event: PaymentEventMessage, asset: string, amount: bigint, reference: string): TransferInput {
  return {
    id: paymentTransferId(event.paymentId, 'fee'),
    debitAccountId: chartAccountId('revenue', asset),
    creditAccountId: chartAccountId('processorFees', asset),
    amount,
    asset,
    code: TransferCode.fee,
    flags: 0,
    reference,
  };
}

export function gasTransfer(event: PaymentEventMessage, gas: GasBooking): TransferInput {
  return {
    id: paymentTransferId(event.paymentId, 'gas'),
    debitAccountId: chartAccountId('gasExpense', gas.asset),
    creditAccountId: chartAccountId('gasFunding', gas.asset),
    amount: gas.amount,
    asset: gas.asset,
    code: TransferCode.gas,
    flags: 0,
    reference: gas.reference,
  };
}

/**
 * A refund of the payment: its own transfer (code 2) from the merchant's revenue back to the payers' clearing account,
 * its id derived from the refund's, so a redelivered payment.refunded books nothing twice. A refund that is pending
 * or failed books nothing: only money that moved is in the book.
 */
export function refundTransfer(event: PaymentEventMessage, asset: string, refund: RefundBooking): TransferInput {
  return {
    id: paymentTransferId(event.paymentId, `refund:${refund.refundId.toLowerCase()}`),
    debitAccountId: chartAccountId('revenue', asset),
    creditAccountId: chartAccountId('payerClearing', asset),
    amount: refund.amount,
    asset,
    code: TransferCode.refund,
    flags: 0,
    reference: refund.reference,
  };
}

/** What the chain or Stripe knows the settlement by: the transaction hash, or the PaymentIntent id. */
function settlementReference(event: PaymentEventMessage): string | undefined {
  const { data } = event;
  if ('txHash' in data && data.txHash) return data.txHash.toLowerCase();
  if ('reference' in data && data.reference) return data.reference;
  return event.payment.txHash?.toLowerCase() ?? event.payment.reference ?? undefined;
}

/** The payment's share of the settlement transaction's fee, when the facilitator paid one. */
function gasOf(event: PaymentEventMessage): GasBooking | undefined {
  const { data } = event;
  if (!('gasFee' in data) || !('txHash' in data)) return undefined;
  const amount = BigInt(data.gasFee);
  return amount > 0n ? { asset: nativeAsset(event.payment.network), amount, reference: data.txHash.toLowerCase() } : undefined;
}
