import type { NewPayment } from '../settlement/chain-payments.repository';
import type { ChargeRefusal, StoredAuthorization, SubscriptionRecord } from './subscriptions.repository';

/** What charging one period needs, or why it is not attempted (and, for a grant the payer withdrew, what the rail saw). */
export type ChargePreparation =
  | { ok: true; payment: NewPayment }
  | {
      ok: false;
      reason: ChargeRefusal;
      message: string;
      /** the payer withdrew the grant on the rail: the subscription is revoked with this */
      revoked?: { message: string; at: Date; nonce?: string; txHash?: string };
    };

/**
 * One subscription rail per MPP method (as ChargeRail is for charges): how a renewal the ledger asks for is charged.
 * The MPP side of the same method (challenge, credential, activation) is its ChargeRail with intent `subscription`.
 * evm: a stored authorization settled by the settlement engine; stripe (later): Stripe Billing renews by itself and
 * reports through invoice.paid.
 */
export interface SubscriptionRail {
  readonly method: string;
  /** Checks the rail's own truth (evm: the authorization unused on chain) and builds the payment; writes nothing. */
  prepareCharge(subscription: SubscriptionRecord, periodIndex: number, attempt: number): Promise<ChargePreparation>;
  /** prepareCharge for renewals due together, in as few round trips as the rail allows (evm: two RPC calls); in order. */
  prepareCharges?(requests: readonly ChargeRequest[]): Promise<ChargePreparation[]>;
  /** The charge is recorded: start it (evm: the settlement queue), without waiting for its outcome. */
  startCharge(paymentId: string): Promise<void>;
  /** startCharge for many (evm: one round trip to the queue, for batch jobs that send them together). */
  startCharges?(paymentIds: readonly string[]): Promise<void>;
  /**
   * A cancel the ledger asked for, told to the rail before it is recorded (stripe: the Stripe subscription ends at
   * period end, or now). Idempotent; throws when the rail's answer is unknown, so the command is tried again.
   */
  cancel?(subscription: SubscriptionRecord, command: { commandId: string; at: 'period_end' | 'immediately'; effectiveAt: Date }): Promise<void>;
}

/** One charge a batch asks a rail to prepare: the period's stored authorization with it, when the rail keeps one. */
export interface ChargeRequest {
  subscription: SubscriptionRecord;
  periodIndex: number;
  attempt: number;
  authorization?: StoredAuthorization;
}

export const SUBSCRIPTION_RAILS = Symbol('SUBSCRIPTION_RAILS');
