import type { PrismaService } from '@mp/db';

/**
 * The ledger's invariants for one merchant, read straight from PostgreSQL: per asset, debits equal credits (posted
 * and pending); no flagged account beyond its limit; every balance equal to what its transfers add up to.
 * Returns the violations (empty when all hold).
 */
export async function ledgerViolations(db: PrismaService, merchantId: string): Promise<string[]> {
  const unbalanced = await db.$queryRawUnsafe<{ asset: string; dp: string; cp: string; dpo: string; cpo: string }[]>(
    `SELECT asset, sum(debits_pending)::text AS dp, sum(credits_pending)::text AS cp, sum(debits_posted)::text AS dpo, sum(credits_posted)::text AS cpo
       FROM ledger.accounts WHERE merchant_id = $1::uuid GROUP BY asset
     HAVING sum(debits_pending) <> sum(credits_pending) OR sum(debits_posted) <> sum(credits_posted)`,
    merchantId,
  );
  const beyondLimits = await db.$queryRawUnsafe<{ id: string }[]>(
    `SELECT id::text FROM ledger.accounts WHERE merchant_id = $1::uuid
        AND ((flags & 2 <> 0 AND debits_pending + debits_posted > credits_posted) OR (flags & 4 <> 0 AND credits_pending + credits_posted > debits_posted)
             OR least(debits_pending, debits_posted, credits_pending, credits_posted) < 0)`,
    merchantId,
  );
  // posted: single-phase transfers and posts; pending: pending transfers neither resolved nor released on expiry
  const drifted = await db.$queryRawUnsafe<{ id: string }[]>(
    `WITH moves AS (
       SELECT t.debit_account_key AS key, t.amount AS d_posted, 0 AS c_posted, 0 AS d_pending, 0 AS c_pending FROM ledger.transfers t
        WHERE t.merchant_id = $1::uuid AND t.flags & 10 = 0
       UNION ALL
       SELECT t.credit_account_key, 0, t.amount, 0, 0 FROM ledger.transfers t WHERE t.merchant_id = $1::uuid AND t.flags & 10 = 0
       UNION ALL
       SELECT k.key, 0, 0, CASE WHEN k.side = 'd' THEN t.amount ELSE 0 END, CASE WHEN k.side = 'c' THEN t.amount ELSE 0 END
         FROM ledger.transfers t, LATERAL (VALUES (t.debit_account_key, 'd'), (t.credit_account_key, 'c')) AS k(key, side)
        WHERE t.merchant_id = $1::uuid AND t.flags & 2 <> 0
          AND NOT EXISTS (SELECT 1 FROM ledger.transfers r WHERE r.merchant_id = t.merchant_id AND r.pending_id = t.id)
          AND (t.expires_at IS NULL OR EXISTS (SELECT 1 FROM ledger.pending_timeouts p WHERE p.merchant_id = t.merchant_id AND p.transfer_id = t.id))
     ), sums AS (
       SELECT key, sum(d_posted) AS dpo, sum(c_posted) AS cpo, sum(d_pending) AS dp, sum(c_pending) AS cp FROM moves GROUP BY key
     )
     SELECT a.id::text FROM ledger.accounts a LEFT JOIN sums s ON s.key = a.key
      WHERE a.merchant_id = $1::uuid
        AND (a.debits_posted, a.credits_posted, a.debits_pending, a.credits_pending)
            IS DISTINCT FROM (coalesce(s.dpo, 0), coalesce(s.cpo, 0), coalesce(s.dp, 0), coalesce(s.cp, 0))`,
    merchantId,
  );
  return [
    ...unbalanced.map((u) => `${u.asset}: debits ${u.dpo}/${u.dp} (posted/pending) vs credits ${u.cpo}/${u.cp}`),
    ...beyondLimits.map((a) => `account ${a.id} is beyond its limit or negative`),
    ...drifted.map((a) => `account ${a.id}: balances differ from the sum of its transfers`),
  ];
}

/** Every account of a merchant with its four totals, as text, for before/after comparisons. */
export async function balancesOf(db: PrismaService, merchantId: string): Promise<Record<string, string>> {
  const rows = await db.$queryRawUnsafe<{ id: string; totals: string }[]>(
    `SELECT id::text, concat_ws('/', debits_pending, debits_posted, credits_pending, credits_posted) AS totals FROM ledger.accounts WHERE merchant_id = $1::uuid`,
    merchantId,
  );
  return Object.fromEntries(rows.map((r) => [r.id, r.totals]));
}

export async function transferCount(db: PrismaService, merchantId: string): Promise<number> {
  const [{ n }] = await db.$queryRawUnsafe<{ n: number }[]>(`SELECT count(*)::int AS n FROM ledger.transfers WHERE merchant_id = $1::uuid`, merchantId);
  return n;
}
