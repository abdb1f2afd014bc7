import { Injectable } from '@nestjs/common';
import { PrismaService } from '@mp/db';
import { releaseExpired } from '@mp/ledger';
import { ACCOUNT_JSON, byMerchant, toAccount, type AccountRow } from './rows';
import { WritePool } from './write-pool';

/** Pending transfers past their timeout by the database's clock (the write path's), oldest first: the sweep's next round. */
export const DUE_SQL = `
  SELECT p.merchant_id::text AS "merchantId", p.transfer_id::text AS id
    FROM ledger.pending_timeouts p WHERE p.expires_at <= clock_timestamp() ORDER BY p.expires_at LIMIT $1`;

/** Locks the accounts of those transfers in key order, as the write path does, and reads the clock after. */
export const LOCK_SQL = `
  SELECT clock_timestamp() AS now, coalesce(json_agg(${ACCOUNT_JSON}), '[]') AS accounts
    FROM (SELECT a.* FROM ledger.accounts a
           WHERE a.key IN (SELECT k FROM unnest($1::uuid[], $2::uuid[]) AS d(merchant_id, id)
                             JOIN ledger.transfers t ON t.merchant_id = d.merchant_id AND t.id = d.id,
                                  LATERAL (VALUES (t.debit_account_key), (t.credit_account_key)) AS keys(k))
           ORDER BY a.key FOR UPDATE OF a) AS a`;

/**
 * Takes the due transfers off the expiry list, under the locks: only a row still there is released, so a post
 * or void that won the lock, or another replica's sweep, leaves nothing to release twice.
 */
export const TAKE_SQL = `
  WITH taken AS (
    DELETE FROM ledger.pending_timeouts p USING unnest($1::uuid[], $2::uuid[]) AS d(merchant_id, id)
     WHERE p.merchant_id = d.merchant_id AND p.transfer_id = d.id AND p.expires_at <= $3::timestamptz
    RETURNING p.merchant_id, p.transfer_id
  )
  SELECT t.merchant_id::text AS "merchantId", da.id::text AS "debitAccountId", ca.id::text AS "creditAccountId", t.amount::text AS amount
    FROM taken JOIN ledger.transfers t ON t.merchant_id = taken.merchant_id AND t.id = taken.transfer_id
    JOIN ledger.accounts da ON da.key = t.debit_account_key JOIN ledger.accounts ca ON ca.key = t.credit_account_key`;

export const UPDATE_SQL = `
  UPDATE ledger.accounts a SET debits_pending = u.dp, credits_pending = u.cp
    FROM unnest($1::bigint[], $2::numeric[], $3::numeric[]) AS u(key, dp, cp) WHERE a.key = u.key`;

/**
 * Releases the reservations of pending transfers whose timeout passed (TigerBeetle's expiry). It takes account
 * locks, so its transaction runs on the write path's pool, like the transfers' own.
 */
@Injectable()
export class ExpiryStore {
  constructor(
    private readonly db: PrismaService,
    private readonly pool: WritePool,
  ) {}

  /** Releases up to `limit` expired reservations; returns how many it released. */
  async releaseDue(limit: number): Promise<number> {
    const due = await this.db.$queryRawUnsafe<{ merchantId: string; id: string }[]>(DUE_SQL, limit);
    if (!due.length) return 0;
    const keys = [due.map((d) => d.merchantId), due.map((d) => d.id)];
    return this.pool.transaction(async (run) => {
      const [locked] = await run<{ now: Date; accounts: AccountRow[] }>('ledger_expiry_lock', LOCK_SQL, keys);
      const taken = await run<{ merchantId: string; debitAccountId: string; creditAccountId: string; amount: string }>('ledger_expiry_take', TAKE_SQL, [
        ...keys,
        locked.now,
      ]);
      const accountsOf = byMerchant(locked.accounts.map(toAccount));
      const released = [...byMerchant(taken)].flatMap(([merchantId, expired]) => {
        const accounts = accountsOf.get(merchantId) ?? [];
        const keyOf = new Map(accounts.map((a) => [a.id, a.key]));
        return releaseExpired(
          accounts,
          expired.map((e) => ({ ...e, amount: BigInt(e.amount) })),
        ).map((a) => ({ ...a, key: keyOf.get(a.id)! }));
      });
      if (released.length) {
        await run('ledger_expiry_update', UPDATE_SQL, [
          released.map((a) => a.key),
          released.map((a) => a.debitsPending.toString()),
          released.map((a) => a.creditsPending.toString()),
        ]);
      }
      return taken.length;
    });
  }
}
