import { randomBytes } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { PrismaService } from '@mp/db';
import { issuerKey } from '@mp/mpp';
import { ExpiringMap } from '@mp/platform';
import { FACILITATOR_CONFIG, type FacilitatorConfig } from '../config/facilitator.config';

/** The longest a challenge may live: a rotated-out secret is accepted for this long after the rotation. */
export const MAX_CHALLENGE_TTL_SECONDS = 3600;

export interface ScopeSecrets {
  secret: string;
  /** the merchant's key for challenges it issues itself (issuerKey of the secret) */
  issuerKey: string;
  /**
   * accepted beside the secret: its issuer key, and the previous secret and its issuer key while challenges issued
   * before the rotation may not have expired
   */
  alsoAccepted: string[];
}

/**
 * One HMAC secret per merchant (scope = merchant id, '' in open mode), made on first use and kept in PostgreSQL so
 * every replica binds and checks challenge ids alike. Read through a short cache, as API keys are. Rotated by the
 * operator API (`npm run merchants -- rotate-mpp-secret`), which keeps the previous secret for MAX_CHALLENGE_TTL_SECONDS.
 */
@Injectable()
export class MppSecrets {
  private readonly cache: ExpiringMap<string, ScopeSecrets>;

  constructor(
    @Inject(FACILITATOR_CONFIG) config: FacilitatorConfig,
    private readonly db: PrismaService,
  ) {
    this.cache = new ExpiringMap(config.apiKeyCacheMs);
  }

  async forScope(scope: string): Promise<ScopeSecrets> {
    const cached = this.cache.get(scope);
    if (cached) return cached;
    await this.db.mppSecret.createMany({ data: { scope, secret: randomBytes(32).toString('hex') }, skipDuplicates: true });
    const row = await this.db.mppSecret.findUnique({ where: { scope }, select: { secret: true, previousSecret: true, rotatedAt: true } });
    if (!row) throw new Error(`the MPP secret of scope "${scope}" is missing`);
    // an hour's window: the clocks of this host and the database agree well enough for it
    const recent = row.rotatedAt !== null && row.rotatedAt.getTime() > Date.now() - MAX_CHALLENGE_TTL_SECONDS * 1000;
    const current = issuerKey(row.secret);
    const earlier = row.previousSecret && recent ? [row.previousSecret, issuerKey(row.previousSecret)] : [];
    const value = { secret: row.secret, issuerKey: current, alsoAccepted: [current, ...earlier] };
    this.cache.set(scope, value);
    return value;
  }

  /**
   * A new secret for the scope; the one it replaces stays accepted for MAX_CHALLENGE_TTL_SECONDS (the longest a
   * challenge lives). Other replicas pick it up within API_KEY_CACHE_MS. Returns when it was rotated.
   */
  async rotate(scope: string): Promise<Date> {
    // one statement, so the secret kept as previous is the one replaced (the client's upsert cannot read it)
    const rows = await this.db.$queryRawUnsafe<{ rotated_at: Date }[]>(
      `INSERT INTO facilitator.mpp_secrets (scope, secret, rotated_at) VALUES ($1, $2, now())
       ON CONFLICT (scope) DO UPDATE SET previous_secret = mpp_secrets.secret, secret = EXCLUDED.secret, rotated_at = now()
       RETURNING rotated_at`,
      scope,
      randomBytes(32).toString('hex'),
    );
    this.cache.delete(scope);
    return rows[0].rotated_at;
  }
}
