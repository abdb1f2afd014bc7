import { Injectable } from '@nestjs/common';
import { PrismaService } from '@mp/db';
import type { ProblemCode, Receipt } from '@mp/mpp';

/** claimed: settling now; retryable: its outcome was unknown when the attempt ended; settled; failed. */
export type ClaimState = 'claimed' | 'retryable' | 'settled' | 'failed';

export interface Claim {
  state: ClaimState;
  credentialHash: string;
  reference: string | null;
  /** settled: the receipt it was answered with, given again to the same credential */
  receipt: Receipt | null;
  payer: string | null;
  /** failed: the problem it was answered with */
  problem: ProblemCode | null;
  detail: string | null;
  updatedAt: Date;
}

/** The receipt of a claim settled by Stripe's word (webhook or sweep), built in SQL with the members a receipt has. */
const RECEIPT_FROM_ROW = `json_build_object('status', 'success', 'method', method,
  'timestamp', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'reference', $3::text, 'challengeId', challenge_id)`;

export interface NewClaim {
  scope: string;
  challengeId: string;
  method: string;
  intent: string;
  credentialHash: string;
  expiresAt: Date | null;
}

/**
 * Single use of MPP challenges: a challenge is claimed with one INSERT before any money moves, so of two
 * concurrent requests with one credential (on any replica) exactly one goes on to settle.
 */
@Injectable()
export class MppClaims {
  constructor(private readonly db: PrismaService) {}

  /** true: this caller holds the challenge now. */
  async claim(c: NewClaim): Promise<boolean> {
    const rows = await this.db.$queryRawUnsafe<{ claimed: boolean }[]>(
      `INSERT INTO facilitator.mpp_claims (scope, challenge_id, method, intent, credential_hash, state, expires_at)
       VALUES ($1, $2, $3, $4, $5, 'claimed', $6::timestamptz)
       ON CONFLICT (scope, challenge_id) DO NOTHING
       RETURNING true AS claimed`,
      c.scope,
      c.challengeId,
      c.method,
      c.intent,
      c.credentialHash,
      c.expiresAt,
    );
    return rows.length === 1;
  }

  async find(scope: string, challengeId: string): Promise<Claim | undefined> {
    const rows = await this.db.$queryRawUnsafe<Claim[]>(
      `SELECT state, credential_hash AS "credentialHash", reference, receipt, payer, problem, detail, updated_at AS "updatedAt"
         FROM facilitator.mpp_claims WHERE scope = $1 AND challenge_id = $2`,
      scope,
      challengeId,
    );
    return rows[0];
  }

  /**
   * Takes over a claim left unfinished: at once when its last attempt ended with the outcome unknown, or when its
   * holder has been silent for `staleMs` (a crash). Only with the same credential; one taker wins.
   */
  async takeOver(scope: string, challengeId: string, credentialHash: string, staleMs: number): Promise<boolean> {
    const rows = await this.db.$queryRawUnsafe<{ id: string }[]>(
      `UPDATE facilitator.mpp_claims SET state = 'claimed', updated_at = now()
        WHERE scope = $1 AND challenge_id = $2 AND credential_hash = $3
          AND (state = 'retryable' OR (state = 'claimed' AND updated_at < now() - ($4::int * interval '1 millisecond')))
        RETURNING challenge_id AS id`,
      scope,
      challengeId,
      credentialHash,
      staleMs,
    );
    return rows.length === 1;
  }

  /**
   * What the payment record of a claim's challenge says, for a claim whose own state was never finished (a crash
   * after the payment moved, or an evm settlement the worker completed after the answer): the reference of a
   * confirmed payment (a transaction hash or a PaymentIntent id), or the reason of a failed or expired one.
   */
  async recordedOutcome(scope: string, challengeId: string): Promise<{ state: 'confirmed'; reference: string } | { state: 'failed' | 'expired'; reason: string | null; message: string | null } | undefined> {
    const rows = await this.db.$queryRawUnsafe<{ state: string; reference: string | null; reason: string | null; message: string | null }[]>(
      `SELECT state::text AS state, CASE WHEN rail = 'stripe' THEN reference ELSE tx_hash END AS reference,
              error_reason AS reason, error_message AS message
         FROM facilitator.payments
        WHERE protocol = 'mpp' AND challenge_id = $2 AND merchant_id IS NOT DISTINCT FROM NULLIF($1, '')::uuid
          AND state IN ('confirmed', 'failed', 'expired')`,
      scope,
      challengeId,
    );
    const row = rows[0];
    if (!row) return undefined;
    if (row.state === 'confirmed') return row.reference ? { state: 'confirmed', reference: row.reference } : undefined;
    return { state: row.state as 'failed' | 'expired', reason: row.reason, message: row.message };
  }

  /** The attempt ended without knowing the outcome: the same credential may drive it again. */
  async retryable(scope: string, challengeId: string, detail: string): Promise<void> {
    await this.db.$executeRawUnsafe(
      `UPDATE facilitator.mpp_claims SET state = 'retryable', detail = $3, updated_at = now() WHERE scope = $1 AND challenge_id = $2 AND state = 'claimed'`,
      scope,
      challengeId,
      detail,
    );
  }

  /**
   * Records the settlement and the receipt answered for it. If the claim was already settled (Stripe's webhook or the
   * sweep told first), its receipt stands: returns the receipt and payer the claim now holds, which are the answer.
   */
  async settled(scope: string, challengeId: string, receipt: Receipt, payer: string | null): Promise<{ receipt: Receipt; payer: string | null }> {
    const rows = await this.db.$queryRawUnsafe<{ receipt: Receipt; payer: string | null }[]>(
      `UPDATE facilitator.mpp_claims
          SET state = 'settled', reference = COALESCE(reference, $3), receipt = COALESCE(receipt, $4::json), payer = COALESCE(payer, $5),
              problem = NULL, detail = NULL, updated_at = now()
        WHERE scope = $1 AND challenge_id = $2
        RETURNING receipt, payer`,
      scope,
      challengeId,
      receipt.reference,
      JSON.stringify(receipt),
      payer,
    );
    return rows[0] ?? { receipt, payer };
  }

  /** A final failure; never over a settlement recorded meanwhile (a webhook's or the sweep's). */
  async failed(scope: string, challengeId: string, problem: ProblemCode, detail: string): Promise<void> {
    await this.db.$executeRawUnsafe(
      `UPDATE facilitator.mpp_claims SET state = 'failed', problem = $3, detail = $4, updated_at = now()
        WHERE scope = $1 AND challenge_id = $2 AND state IN ('claimed', 'retryable')`,
      scope,
      challengeId,
      problem,
      detail,
    );
  }

  /**
   * The claim of a Stripe payment, settled or failed by Stripe's own word (its webhook, or the PaymentIntent the sweep
   * found). A settlement also corrects a claim answered as failed: the same credential sent again then gets a receipt.
   * A failure never overrides a settlement.
   */
  async resolveByReference(challengeId: string, outcome: { state: 'settled'; reference: string; payer?: string } | { state: 'failed'; reference?: string; problem: ProblemCode; detail: string }): Promise<void> {
    if (outcome.state === 'settled') {
      await this.db.$executeRawUnsafe(
        `UPDATE facilitator.mpp_claims
            SET state = 'settled', reference = $3, receipt = COALESCE(receipt, ${RECEIPT_FROM_ROW}), payer = COALESCE(payer, $2),
                problem = NULL, detail = NULL, updated_at = now()
          WHERE challenge_id = $1 AND state IN ('claimed', 'retryable', 'failed')`,
        challengeId,
        outcome.payer ?? null,
        outcome.reference,
      );
      return;
    }
    await this.db.$executeRawUnsafe(
      `UPDATE facilitator.mpp_claims SET state = 'failed', reference = COALESCE($2, reference), problem = $3, detail = $4, updated_at = now()
        WHERE challenge_id = $1 AND state IN ('claimed', 'retryable')`,
      challengeId,
      outcome.reference ?? null,
      outcome.problem,
      outcome.detail,
    );
  }
}
