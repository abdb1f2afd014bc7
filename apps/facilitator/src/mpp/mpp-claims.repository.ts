import { Injectable } from '@nestjs/common';
import { PrismaService } from '@mp/db';

/** claimed: settling now; retryable: its outcome was unknown when the attempt ended; settled; failed. */
export type ClaimState = 'claimed' | 'retryable' | 'settled' | 'failed';

export interface Claim {
  state: ClaimState;
  credentialHash: string;
  reference: string | null;
  updatedAt: Date;
}

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
      `SELECT state, credential_hash AS "credentialHash", reference, updated_at AS "updatedAt"
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

  /** The attempt ended without knowing the outcome: the same credential may drive it again. */
  async retryable(scope: string, challengeId: string, detail: string): Promise<void> {
    await this.db.$executeRawUnsafe(
      `UPDATE facilitator.mpp_claims SET state = 'retryable', detail = $3, updated_at = now() WHERE scope = $1 AND challenge_id = $2 AND state = 'claimed'`,
      scope,
      challengeId,
      detail,
    );
  }

  async settled(scope: string, challengeId: string, reference: string): Promise<void> {
    await this.db.$executeRawUnsafe(
      `UPDATE facilitator.mpp_claims SET state = 'settled', reference = $3, updated_at = now() WHERE scope = $1 AND challenge_id = $2`,
      scope,
      challengeId,
      reference,
    );
  }

  async failed(scope: string, challengeId: string, problem: string, detail: string): Promise<void> {
    await this.db.$executeRawUnsafe(
      `UPDATE facilitator.mpp_claims SET state = 'failed', problem = $3, detail = $4, updated_at = now() WHERE scope = $1 AND challenge_id = $2`,
      scope,
      challengeId,
      problem,
      detail,
    );
  }

  /** Marks the claim of a Stripe payment settled or failed when only Stripe's webhook could tell. */
  async resolveByReference(challengeId: string, state: 'settled' | 'failed', reference: string): Promise<void> {
    await this.db.$executeRawUnsafe(
      `UPDATE facilitator.mpp_claims SET state = $2, reference = $3, updated_at = now() WHERE challenge_id = $1 AND state IN ('claimed', 'retryable')`,
      challengeId,
      state,
      reference,
    );
  }
}
