import type { Challenge, Credential, MppError, Receipt } from '@mp/mpp';
import type { PreparedCall } from '../../settlement/settlement.service';

/** A credential whose challenge we issued for this route, handed to the rail of its method. */
export interface ChargeAttempt {
  challenge: Challenge;
  credential: Credential;
  /** sha256 of the credential as presented */
  credentialHash: string;
  merchantId: string | null;
}

export type RequestCheck = { ok: true; request: Record<string, unknown> } | { ok: false; problems: string[] };

export type RailVerdict = { ok: true; payer?: string } | { ok: false; error: MppError };

/** Members a method adds to its receipt: a subscription's `subscriptionId` (and on Stripe its `stripeSubscription`), `externalId`. */
export interface ReceiptFields {
  subscriptionId?: string;
  stripeSubscription?: string;
  externalId?: string;
}

export type RailSettlement =
  /** `receipt`: members the method adds to the receipt (a subscription's `subscriptionId`, `externalId`) */
  | { ok: true; reference: string; payer?: string; receipt?: ReceiptFields }
  /** `final: false`: the outcome is not known yet (pending on chain, or the processor unreachable): the claim stays. */
  | { ok: false; error: MppError; final: boolean };

/**
 * One MPP payment method and intent (`charge`, or `subscription`: its activation): how its requests are issued, its
 * credentials checked and settled.
 */
export interface ChargeRail {
  readonly method: string;
  /** the MPP intent it serves; `charge` when absent */
  readonly intent?: string;
  /** Validates an offer's request and returns it exactly as it will be issued (defaults made explicit). */
  normalize(request: unknown): RequestCheck;
  /**
   * Checks short of moving money; no side effects. `beforeSettle`: only what must hold before the challenge is
   * claimed (settlement itself checks the rest atomically), so no work is done twice.
   */
  verify(attempt: ChargeAttempt, options: { beforeSettle: boolean }): Promise<RailVerdict>;
  /**
   * Starts the read-only work its settle begins with (evm: the transfer's simulation), so that it runs while the
   * challenge is claimed; called after verify(attempt, { beforeSettle: true }) passed, whose checks it does not repeat;
   * handed to settle when this request's claim wins. Never rejects unhandled; undefined when there is nothing to
   * start (settle finds out why).
   */
  begin?(attempt: ChargeAttempt): Promise<PreparedCall> | undefined;
  /** Moves the money for a claimed challenge, exactly once; `begun`: what begin started for this request. */
  settle(attempt: ChargeAttempt, begun?: Promise<PreparedCall>): Promise<RailSettlement>;
  /**
   * The members the method adds to a receipt rebuilt from the payment's record (a subscription's `subscriptionId`),
   * when the claim lost the receipt its settlement answered with.
   */
  receiptFields?(attempt: ChargeAttempt): Promise<ReceiptFields | undefined>;
  /**
   * A rail whose credentials are not claimed once (intent `session`: one challenge opens a channel, later credentials
   * echo challenges of the same route) answers each credential itself: /mpp/settle calls this instead of claim + settle.
   */
  present?(attempt: ChargeAttempt): Promise<PresentedCredential>;
}

/** What a presented credential came to: the receipt (with the method's members) and the payer, or a problem. */
export type PresentedCredential = { ok: true; receipt: Receipt; payer: string } | { ok: false; error: MppError };

export const CHARGE_RAILS = Symbol('CHARGE_RAILS');
