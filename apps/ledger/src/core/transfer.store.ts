import { Injectable, Logger } from '@nestjs/common';
import { TransferBatch, TransferFlag, has, type CreatedTransfer, type TransferInput, type TransferResult, type TransferResultCode } from '@mp/ledger';
import { KeySet, scoped } from './key-set';
import { ACCOUNT_JSON, byMerchant, toAccount, toTransfer, TRANSFER_ACCOUNTS_JOIN, TRANSFER_JSON, type AccountRow, type TransferRow } from './rows';
import { WritePool, type Statement } from './write-pool';

/** One request's transfers, for one merchant. */
export interface Submission {
  merchantId: string;
  transfers: TransferInput[];
}

/** The database changed between a read and a write of this transaction in a way only a retry can sort out. */
export class StaleReadError extends Error {}

const POST_OR_VOID = TransferFlag.post_pending_transfer | TransferFlag.void_pending_transfer;

/**
 * Locks the batch's accounts in key order (one global order, so concurrent batches cannot deadlock): the accounts
 * its transfers name and the accounts of the stored pending transfers it posts or voids. In the same statement it
 * reads the clock (an aggregate's output is computed after every input row, so after every lock), the stored
 * transfers with the batch's ids and the pending transfers it names, their resolutions and the failed ids. One
 * statement, so one snapshot: a pending transfer read here always has its accounts locked here, even when it was
 * committed by a concurrent transaction a moment before (two statements once saw it in the second and not in the
 * first, and the post crashed). The keys to lock are one array, computed once: as `IN (subquery … UNION ALL …)`
 * under a generic plan, PostgreSQL's recheck of a row updated by a concurrent transaction dropped that row from
 * the result, unlocked. Rows committed after the snapshot make the write fail on a unique index, and the batch is
 * retried.
 */
export const LOCK_AND_READ_SQL = `
  SELECT clock_timestamp() AS now,
         coalesce(json_agg(${ACCOUNT_JSON}), '[]') AS accounts,
         (SELECT coalesce(json_agg(${TRANSFER_JSON}), '[]')
            FROM unnest($3::uuid[], $4::uuid[]) AS k(merchant_id, id)
            JOIN ledger.transfers t ON t.merchant_id = k.merchant_id AND t.id = k.id
            ${TRANSFER_ACCOUNTS_JOIN}) AS transfers,
         (SELECT coalesce(json_agg(json_build_object('merchantId', r.merchant_id, 'pendingId', r.pending_id, 'flags', r.flags)), '[]')
            FROM unnest($5::uuid[], $6::uuid[]) AS k(merchant_id, id)
            JOIN ledger.transfers r ON r.merchant_id = k.merchant_id AND r.pending_id = k.id) AS resolutions,
         (SELECT coalesce(json_agg(json_build_object('merchantId', f.merchant_id, 'id', f.id, 'result', f.result)), '[]')
            FROM unnest($3::uuid[], $4::uuid[]) AS k(merchant_id, id)
            JOIN ledger.failed_transfers f ON f.merchant_id = k.merchant_id AND f.id = k.id) AS failures
    FROM (SELECT a.* FROM ledger.accounts a
           WHERE a.key = ANY (ARRAY(SELECT n.key FROM ledger.accounts n
                                      JOIN unnest($1::uuid[], $2::uuid[]) AS k(merchant_id, id) ON n.merchant_id = k.merchant_id AND n.id = k.id
                                    UNION ALL
                                    SELECT keys.k FROM unnest($5::uuid[], $6::uuid[]) AS k(merchant_id, id)
                                      JOIN ledger.transfers p ON p.merchant_id = k.merchant_id AND p.id = k.id,
                                           LATERAL (VALUES (p.debit_account_key), (p.credit_account_key)) AS keys(k)))
           ORDER BY a.key FOR UPDATE OF a) AS a`;

/**
 * Everything a batch changes, in one statement: new transfers (multi-row, through unnest), the accounts' new
 * totals, pending transfers entering and leaving the expiry list, and transiently failed ids. Sequence numbers are
 * drawn here, after the locks, in request order.
 */
export const WRITE_SQL = `
  WITH new_transfers AS (
    INSERT INTO ledger.transfers (merchant_id, id, debit_account_key, credit_account_key, amount, pending_id, asset, code, flags, timeout,
                                  expires_at, reference, ts, debit_debits_posted, debit_credits_posted, credit_debits_posted, credit_credits_posted)
    SELECT u.merchant_id, u.id, u.dr, u.cr, u.amount, u.pending_id, u.asset, u.code, u.flags, u.timeout, u.expires_at, u.reference, $1::timestamptz,
           u.ddp, u.dcp, u.cdp, u.ccp
      FROM unnest($2::uuid[], $3::uuid[], $4::bigint[], $5::bigint[], $6::numeric[], $7::uuid[], $8::text[], $9::int[], $10::smallint[],
                  $11::int[], $12::timestamptz[], $13::text[], $14::numeric[], $15::numeric[], $16::numeric[], $17::numeric[])
           AS u(merchant_id, id, dr, cr, amount, pending_id, asset, code, flags, timeout, expires_at, reference, ddp, dcp, cdp, ccp)
    RETURNING 1
  ), balances AS (
    UPDATE ledger.accounts a
       SET debits_pending = u.dp, debits_posted = u.dpo, credits_pending = u.cp, credits_posted = u.cpo
      FROM unnest($18::bigint[], $19::numeric[], $20::numeric[], $21::numeric[], $22::numeric[]) AS u(key, dp, dpo, cp, cpo)
     WHERE a.key = u.key
    RETURNING 1
  ), opened AS (
    INSERT INTO ledger.pending_timeouts (merchant_id, transfer_id, expires_at)
    SELECT * FROM unnest($23::uuid[], $24::uuid[], $25::timestamptz[])
    RETURNING 1
  ), closed AS (
    DELETE FROM ledger.pending_timeouts p USING unnest($26::uuid[], $27::uuid[]) AS u(merchant_id, id)
     WHERE p.merchant_id = u.merchant_id AND p.transfer_id = u.id
    RETURNING 1
  ), failed AS (
    INSERT INTO ledger.failed_transfers (merchant_id, id, result)
    SELECT * FROM unnest($28::uuid[], $29::uuid[], $30::text[])
    RETURNING 1
  )
  SELECT (SELECT count(*) FROM closed)::int AS closed`;

interface LockedState {
  now: Date;
  accounts: AccountRow[];
  transfers: TransferRow[];
  resolutions: { merchantId: string; pendingId: string; flags: number }[];
  failures: { merchantId: string; id: string; result: TransferResultCode }[];
}

/**
 * The ledger's write path: a batch of requests in one short transaction. It reads the pending transfers named
 * (immutable, so unlocked), locks and reads the accounts, applies the rules of @mp/ledger per merchant, and writes
 * every change in one statement: BEGIN, two or three prepared statements and COMMIT, whatever the batch size, in two
 * round trips when it closes no pending timeout (BEGIN with the first, COMMIT with the last).
 */
@Injectable()
export class TransferStore {
  private readonly logger = new Logger(TransferStore.name);

  constructor(private readonly pool: WritePool) {}

  write(submissions: readonly Submission[]): Promise<TransferResult[][]> {
    return this.pool.transaction((run) => this.writeIn(run, submissions));
  }

  private async writeIn(run: Statement, submissions: readonly Submission[]): Promise<TransferResult[][]> {
    const accountKeys = new KeySet();
    const transferKeys = new KeySet();
    const pendingKeys = new KeySet();
    for (const { merchantId, transfers } of submissions) {
      for (const t of transfers) {
        transferKeys.add(merchantId, t.id);
        if (t.flags & POST_OR_VOID) {
          transferKeys.add(merchantId, t.pendingId);
          pendingKeys.add(merchantId, t.pendingId);
        } else {
          accountKeys.add(merchantId, t.debitAccountId);
          accountKeys.add(merchantId, t.creditAccountId);
        }
      }
    }
    const [state] = await run<LockedState>('ledger_lock_and_read', LOCK_AND_READ_SQL, [
      ...accountKeys.columns(),
      ...transferKeys.columns(),
      ...pendingKeys.columns(),
    ]);

    const accounts = state.accounts.map(toAccount);
    const accountKey = new Map(accounts.map((a) => [scoped(a.merchantId, a.id), a.key]));
    const batches = new Map<string, TransferBatch>();
    const accountsOf = byMerchant(accounts);
    const transfersOf = byMerchant(state.transfers);
    const resolutionsOf = byMerchant(state.resolutions);
    const failuresOf = byMerchant(state.failures);
    const batchFor = (merchantId: string) => {
      let batch = batches.get(merchantId);
      if (!batch) {
        batch = new TransferBatch({
          now: new Date(state.now),
          accounts: accountsOf.get(merchantId) ?? [],
          transfers: (transfersOf.get(merchantId) ?? []).map(toTransfer),
          resolutions: (resolutionsOf.get(merchantId) ?? []).map((r) => [r.pendingId, has(r.flags, TransferFlag.post_pending_transfer) ? 'posted' : 'voided']),
          failures: (failuresOf.get(merchantId) ?? []).map((f) => [f.id, f.result]),
        });
        batches.set(merchantId, batch);
      }
      return batch;
    };
    const results = submissions.map((s) => batchFor(s.merchantId).create(s.transfers));
    for (const [merchantId, batch] of batches) {
      for (const { id, error } of batch.problems) {
        this.logger.error(
          `transfer ${id} of merchant ${merchantId} answered internal_error: judging it threw`,
          error instanceof Error ? error.stack : String(error),
        );
      }
    }

    const changes = [...batches].map(([merchantId, batch]) => ({ merchantId, ...batch.changes }));
    if (changes.every((c) => !c.transfers.length && !c.failures.length)) return results;
    const created: (CreatedTransfer & { merchantId: string })[] = changes.flatMap((c) => c.transfers.map((t) => ({ ...t, merchantId: c.merchantId })));
    const keyOf = (merchantId: string, id: string) => accountKey.get(scoped(merchantId, id))!;
    const changedAccounts = changes.flatMap((c) => c.accounts.map((a) => ({ ...a, key: keyOf(c.merchantId, a.id) })));
    const opened = changes.flatMap((c) => c.timeoutsOpened.map((t) => ({ merchantId: c.merchantId, t })));
    const closed = changes.flatMap((c) => c.timeoutsClosed.map((id) => ({ merchantId: c.merchantId, id })));
    const failed = changes.flatMap((c) => c.failures.map(([id, result]) => ({ merchantId: c.merchantId, id, result })));
    // Nothing to check after the write unless it closes pending timeouts: then it commits in the same round trip.
    const [written] = await run<{ closed: number }>(
      'ledger_write',
      WRITE_SQL,
      [
        new Date(state.now),
        created.map((t) => t.merchantId),
        created.map((t) => t.id),
        created.map((t) => keyOf(t.merchantId, t.debitAccountId)),
        created.map((t) => keyOf(t.merchantId, t.creditAccountId)),
        created.map((t) => t.amount.toString()),
        created.map((t) => t.pendingId),
        created.map((t) => t.asset),
        created.map((t) => t.code),
        created.map((t) => t.flags),
        created.map((t) => t.timeout),
        created.map((t) => t.expiresAt?.toISOString() ?? null),
        created.map((t) => t.reference),
        created.map((t) => t.debitAccountPosted.debits.toString()),
        created.map((t) => t.debitAccountPosted.credits.toString()),
        created.map((t) => t.creditAccountPosted.debits.toString()),
        created.map((t) => t.creditAccountPosted.credits.toString()),
        changedAccounts.map((a) => a.key),
        changedAccounts.map((a) => a.debitsPending.toString()),
        changedAccounts.map((a) => a.debitsPosted.toString()),
        changedAccounts.map((a) => a.creditsPending.toString()),
        changedAccounts.map((a) => a.creditsPosted.toString()),
        opened.map((o) => o.merchantId),
        opened.map((o) => o.t.id),
        opened.map((o) => o.t.expiresAt!.toISOString()),
        closed.map((c) => c.merchantId),
        closed.map((c) => c.id),
        failed.map((f) => f.merchantId),
        failed.map((f) => f.id),
        failed.map((f) => f.result),
      ],
      { commit: closed.length === 0 },
    );
    // A reservation the expiry sweep released already cannot be posted or voided: the rules judged it unexpired
    // by the clock, so only a clock step back can bring this here; a retry judges it again.
    if (written.closed !== closed.length) throw new StaleReadError(`expected to close ${closed.length} pending timeouts, closed ${written.closed}`);
    return results;
  }
}
