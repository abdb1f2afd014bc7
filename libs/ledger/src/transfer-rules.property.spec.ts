import fc from 'fast-check';
import { AccountBatch } from './account-rules';
import { AccountFlag, TransferFlag, has } from './flags';
import type { Account, PendingResolution, Transfer } from './model';
import type { TransferResultCode } from './results';
import { releaseExpired, TransferBatch } from './transfer-rules';
import { scenario } from './testing/scenarios';

/** What the PostgreSQL store keeps, in memory: each batch reads it and its changes are written back. */
class MemoryStore {
  accounts = new Map<string, Account>();
  transfers = new Map<string, Transfer>();
  resolutions = new Map<string, PendingResolution>();
  failures = new Map<string, TransferResultCode>();
  awaitingExpiry = new Map<string, Transfer>();

  batch(now: Date): TransferBatch {
    return new TransferBatch({
      now,
      accounts: this.accounts.values(),
      transfers: this.transfers.values(),
      resolutions: this.resolutions,
      failures: this.failures,
    });
  }

  write(batch: TransferBatch): void {
    const changes = batch.changes;
    for (const a of changes.accounts) this.accounts.set(a.id, a);
    for (const t of changes.transfers) {
      this.transfers.set(t.id, t);
      if (t.pendingId) this.resolutions.set(t.pendingId, has(t.flags, TransferFlag.post_pending_transfer) ? 'posted' : 'voided');
    }
    for (const t of changes.timeoutsOpened) this.awaitingExpiry.set(t.id, t);
    for (const id of changes.timeoutsClosed) this.awaitingExpiry.delete(id);
    for (const [id, code] of changes.failures) this.failures.set(id, code);
  }

  expire(now: Date): void {
    const due = [...this.awaitingExpiry.values()].filter((p) => p.expiresAt!.getTime() <= now.getTime());
    for (const a of releaseExpired(this.accounts.values(), due)) this.accounts.set(a.id, a);
    for (const p of due) this.awaitingExpiry.delete(p.id);
  }
}

function checkInvariants(store: MemoryStore): void {
  const accounts = [...store.accounts.values()];
  for (const asset of new Set(accounts.map((a) => a.asset))) {
    const of = accounts.filter((a) => a.asset === asset);
    const sum = (f: (a: Account) => bigint) => of.reduce((s, a) => s + f(a), 0n);
    expect(sum((a) => a.debitsPosted)).toBe(sum((a) => a.creditsPosted));
    expect(sum((a) => a.debitsPending)).toBe(sum((a) => a.creditsPending));
  }
  for (const a of accounts) {
    for (const v of [a.debitsPending, a.debitsPosted, a.creditsPending, a.creditsPosted]) expect(v >= 0n).toBe(true);
    if (has(a.flags, AccountFlag.debits_must_not_exceed_credits)) expect(a.debitsPending + a.debitsPosted <= a.creditsPosted).toBe(true);
    if (has(a.flags, AccountFlag.credits_must_not_exceed_debits)) expect(a.creditsPending + a.creditsPosted <= a.debitsPosted).toBe(true);
  }
  // Balances are a projection of the transfers: posted from single-phase transfers and posts, pending from
  // pending transfers neither resolved nor released on expiry.
  for (const a of accounts) {
    let debitsPosted = 0n;
    let creditsPosted = 0n;
    let debitsPending = 0n;
    let creditsPending = 0n;
    for (const t of store.transfers.values()) {
      const pending = has(t.flags, TransferFlag.pending);
      const held = pending && !store.resolutions.has(t.id) && (t.expiresAt === null || store.awaitingExpiry.has(t.id));
      const posted = !pending && !has(t.flags, TransferFlag.void_pending_transfer);
      if (t.debitAccountId === a.id) {
        debitsPosted += posted ? t.amount : 0n;
        debitsPending += held ? t.amount : 0n;
      }
      if (t.creditAccountId === a.id) {
        creditsPosted += posted ? t.amount : 0n;
        creditsPending += held ? t.amount : 0n;
      }
    }
    expect([a.debitsPending, a.debitsPosted, a.creditsPending, a.creditsPosted]).toEqual([debitsPending, debitsPosted, creditsPending, creditsPosted]);
  }
}

describe('create_transfers over random workloads (in memory)', () => {
  it('keeps debits equal to credits per asset, limits respected, balances equal to the log, and replays inert', () => {
    const clockSteps = fc.array(fc.integer({ min: 0, max: 1500 }), { minLength: 64, maxLength: 64 });
    // how many requests share each batch, as the writer merges concurrent requests into one transaction
    const batchSizes = fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 16, maxLength: 16 });
    fc.assert(
      fc.property(scenario(1), clockSteps, batchSizes, ({ accounts, requests }, steps, merges) => {
        const store = new MemoryStore();
        const setup = new AccountBatch([]);
        expect(setup.create(accounts).every((r) => r.result === 'created')).toBe(true);
        for (const a of setup.created) store.accounts.set(a.id, a);

        let clock = Date.parse('2026-12-01T00:00:00Z');
        const firstResults: TransferResultCode[][] = [];
        for (let i = 0, b = 0; i < requests.length; i += merges[b++ % merges.length]) {
          clock += steps[b % steps.length];
          store.expire(new Date(clock));
          const batch = store.batch(new Date(clock));
          for (const request of requests.slice(i, i + merges[b % merges.length])) firstResults.push(batch.create(request).map((r) => r.result));
          expect(batch.problems).toEqual([]);
          store.write(batch);
          checkInvariants(store);
        }

        const replay = store.batch(new Date(clock + 1));
        requests.forEach((request, i) => {
          const again = replay.create(request).map((r) => r.result);
          again.forEach((result, k) => {
            if (firstResults[i][k] === 'created' || firstResults[i][k] === 'exists') expect(result).toBe('exists');
            else expect(result).not.toBe('created');
          });
        });
        expect(replay.changes.transfers).toEqual([]);
        expect(replay.changes.accounts).toEqual([]);
      }),
      { numRuns: 300 },
    );
  });
});
