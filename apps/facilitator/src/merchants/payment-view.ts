import { getAddress } from 'viem';
import { PAYMENT_SNAPSHOT_STATES, type PaymentSnapshot } from '@mp/clients';

/** The states a payment can be seen in: the outbox contract's, one list. */
export const PAYMENT_VIEW_STATES = PAYMENT_SNAPSHOT_STATES;
export type PaymentViewState = (typeof PAYMENT_VIEW_STATES)[number];

/** A payment as merchants see it, in GET /payments and in webhooks. Amounts are decimal strings of atomic units. */
export interface PaymentView {
  id: string;
  state: PaymentViewState;
  /** which API accepted it */
  protocol: 'x402' | 'mpp';
  /** evm: settled on chain; stripe: a PaymentIntent */
  rail: 'evm' | 'stripe';
  /** CAIP-2, or "stripe" */
  network: string;
  /** token contract, checksummed; on Stripe the currency */
  asset: string;
  payer: string;
  payTo: string;
  amount: string;
  /** the EIP-3009 authorization nonce (on Stripe, the MPP challenge id) */
  nonce: string;
  /** the x402 scheme, or the MPP method */
  scheme: string;
  /** x402 payments only */
  x402Version: number | null;
  /** MPP payments only: the challenge the credential answered */
  challengeId: string | null;
  /** Stripe payments only: the PaymentIntent */
  reference: string | null;
  /** the x402 payment-identifier the payment was settled under, if any */
  paymentIdentifier: string | null;
  txHash: string | null;
  errorReason: string | null;
  errorMessage: string | null;
  createdAt: string;
  updatedAt: string;
  settledAt: string | null;
}

/**
 * Columns of `facilitator.payments p` that make a {@link PaymentRow}: the payment as every consumer sees it (the
 * outbox's snapshot, GET /payments, webhooks), so all of them read the same row the same way.
 */
export const PAYMENT_COLUMNS = `p.id, p.state::text AS state, p.protocol, p.rail, p.network, p.asset, p.payer, p.pay_to AS "payTo",
  p.amount::text AS amount, p.authorization_nonce AS nonce, p.scheme, p.challenge_id AS "challengeId", p.reference,
  p.tx_hash AS "txHash", p.merchant_id::text AS "merchantId",
  p.subscription_id AS "subscriptionId", p.subscription_period AS "subscriptionPeriod", p.subscription_attempt AS "subscriptionAttempt"`;

/** A row read with PAYMENT_COLUMNS: the snapshot's members, a subscription charge's three as columns. */
export interface PaymentRow extends Omit<PaymentSnapshot, 'subscription'> {
  subscriptionId: string | null;
  subscriptionPeriod: number | null;
  subscriptionAttempt: number | null;
}

/** Columns of `facilitator.payments p` that make a {@link PaymentViewRow}. */
export const PAYMENT_VIEW_COLUMNS = `${PAYMENT_COLUMNS}, p.x402_version AS "x402Version",
  (SELECT k.key FROM facilitator.payment_idempotency_keys k WHERE k.payment_id = p.id ORDER BY k.created_at LIMIT 1) AS "paymentIdentifier",
  p.error_reason AS "errorReason", p.error_message AS "errorMessage",
  p.created_at AS "createdAt", p.updated_at AS "updatedAt", p.settled_at AS "settledAt"`;

export interface PaymentViewRow extends PaymentRow {
  x402Version: number | null;
  paymentIdentifier: string | null;
  errorReason: string | null;
  errorMessage: string | null;
  createdAt: Date;
  updatedAt: Date;
  settledAt: Date | null;
}

/**
 * The one snapshot of a payment row: the outbox publishes it as is (addresses as recorded), and the merchant's view
 * (GET /payments, webhooks) is built on it.
 */
export function paymentSnapshot(row: PaymentRow): PaymentSnapshot {
  return {
    id: row.id,
    state: row.state,
    protocol: row.protocol,
    rail: row.rail,
    network: row.network,
    asset: row.asset,
    payer: row.payer,
    payTo: row.payTo,
    amount: row.amount,
    nonce: row.nonce,
    scheme: row.scheme,
    challengeId: row.challengeId,
    reference: row.reference,
    txHash: row.txHash,
    merchantId: row.merchantId,
    ...(row.subscriptionId !== null &&
      row.subscriptionPeriod !== null &&
      row.subscriptionAttempt !== null && { subscription: { id: row.subscriptionId, periodIndex: row.subscriptionPeriod, attempt: row.subscriptionAttempt } }),
  };
}

/** The snapshot as merchants see it: addresses checksummed, no merchant id (it is theirs), and the row's details. */
export function toPaymentView(row: PaymentViewRow): PaymentView {
  // GET /payments and webhooks keep their documented shape; a charge's subscription goes to the ledger only (for now).
  const { merchantId: _merchantId, subscription: _subscription, ...snapshot } = paymentSnapshot(row);
  return {
    ...snapshot,
    asset: checksummed(snapshot.asset),
    payer: checksummed(snapshot.payer),
    payTo: checksummed(snapshot.payTo),
    x402Version: row.x402Version,
    paymentIdentifier: row.paymentIdentifier,
    errorReason: row.errorReason,
    errorMessage: row.errorMessage,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
    settledAt: row.settledAt?.toISOString() ?? null,
  };
}

function checksummed(address: string): string {
  try {
    return getAddress(address);
  } catch {
    return address;
  }
}
