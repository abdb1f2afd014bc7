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

  /** true: this caller holds the challenge now. Prepared (PrismaService.prepared): on every MPP settlement's path. */
  async claim(c: NewClaim): Promise<boolean> {
    const rows = await this.db.prepared(
      'mpp_claim',
      `INSERT INTO facilitator.mpp_claims (scope, challenge_id, method, intent, credential_hash, state, expires_at)
       VALUES ($1, $2, $3, $4, $5, 'claimed', $6::timestamptz)
       ON CONFLICT (scope, challenge_id) DO NOTHING
       RETURNING challenge_id`,
      [c.scope, c.challengeId, c.method, c.intent, c.credentialHash, c.expiresAt],
    );
    return rows.length === 1;
  }

  async find(scope: string, challengeId: string): Promise<Claim | undefined> {
    const row = await this.db.mppClaim.findUnique({
      where: { scope_challengeId: { scope, challengeId } },
      select: { state: true, credentialHash: true, reference: true, receipt: true, payer: true, problem: true, detail: true, updatedAt: true },
    });
    return row ? { ...row, state: row.state as ClaimState, receipt: row.receipt as Receipt | null, problem: row.problem as ProblemCode | null } : undefined;
  }

  /**
   * Takes over a claim left unfinished: at once when its last attempt ended with the outcome unknown, or when its
   * holder has been silent for `staleMs` (a crash). Only with the same credential; one taker wins. SQL: a claimed
   * row's updated_at is the database's clock (its insert's default, or this statement), and so is its staleness.
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
  async recordedOutcome(
    scope: string,
    challengeId: string,
  ): Promise<{ state: 'confirmed'; reference: string } | { state: 'failed' | 'expired'; reason: string | null; message: string | null } | undefined> {
    const row = await this.db.payment.findFirst({
      where: { protocol: 'mpp', challengeId, merchantId: scope === '' ? null : scope, state: { in: ['confirmed', 'failed', 'expired'] } },
      select: { state: true, rail: true, reference: true, txHash: true, errorReason: true, errorMessage: true },
    });
    if (!row) return undefined;
    const reference = row.rail === 'stripe' ? row.reference : row.txHash;
    if (row.state === 'confirmed') return reference ? { state: 'confirmed', reference } : undefined;
    return { state: row.state as 'failed' | 'expired', reason: row.errorReason, message: row.errorMessage };
  }

  /** The attempt ended without knowing the outcome: the same credential may drive it again. */
  async retryable(scope: string, challengeId: string, detail: string): Promise<void> {
    await this.db.mppClaim.updateMany({ where: { scope, challengeId, state: 'claimed' }, data: { state: 'retryable', detail, updatedAt: new Date() } });
  }

  /**
   * Records the settlement and the receipt answered for it. If the claim was already settled (Stripe's webhook or the
   * sweep told first), its receipt stands: returns the receipt and payer the claim now holds, which are the answer.
   * SQL: keeping what the row holds (COALESCE) in the same statement that writes it; prepared, as the claim.
   */
  async settled(scope: string, challengeId: string, receipt: Receipt, payer: string | null): Promise<{ receipt: Receipt; payer: string | null }> {
    const rows = await this.db.prepared<{ receipt: Receipt; payer: string | null }>(
      'mpp_claim_settled',
      `UPDATE facilitator.mpp_claims
          SET state = 'settled', reference = COALESCE(reference, $3), receipt = COALESCE(receipt, $4::json), payer = COALESCE(payer, $5),
              problem = NULL, detail = NULL, updated_at = now()
        WHERE scope = $1 AND challenge_id = $2
        RETURNING receipt, payer`,
      [scope, challengeId, receipt.reference, JSON.stringify(receipt), payer],
    );
    return rows[0] ?? { receipt, payer };
  }

  /** A final failure; never over a settlement recorded meanwhile (a webhook's or the sweep's). */
  async failed(scope: string, challengeId: string, problem: ProblemCode, detail: string): Promise<void> {
    await this.db.mppClaim.updateMany({
      where: { scope, challengeId, state: { in: ['claimed', 'retryable'] } },
      data: { state: 'failed', problem, detail, updatedAt: new Date() },
    });
  }

  /**
   * The claim of a Stripe payment, settled or failed by Stripe's own word (its webhook, or the PaymentIntent the sweep
   * found). A settlement also corrects a claim answered as failed: the same credential sent again then gets a receipt.
   * A failure never overrides a settlement. A settlement is SQL: its receipt is built from the row it updates.
   */
  async resolveByReference(
    challengeId: string,
    outcome: { state: 'settled'; reference: string; payer?: string } | { state: 'failed'; reference?: string; problem: ProblemCode; detail: string },
  ): Promise<void> {
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
    await this.db.mppClaim.updateMany({
      where: { challengeId, state: { in: ['claimed', 'retryable'] } },
      data: {
        state: 'failed',
        ...(outcome.reference && { reference: outcome.reference }),
        problem: outcome.problem,
        detail: outcome.detail,
        updatedAt: new Date(),
      },
    });
  }
}
