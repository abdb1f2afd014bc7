import fc from 'fast-check';
import { AccountFlag, TransferFlag } from '../flags';
import type { AccountInput, TransferInput } from '../model';

/**
 * Random ledger workloads for property tests, shared by the pure rules' tests and the PostgreSQL ones: a fixed
 * chart of accounts and a sequence of requests (each a list of transfers) mixing single-phase and pending
 * transfers, posts (whole and partial), voids, linked chains, zero amounts, mixed assets, retries of earlier
 * transfers and retries with a changed amount.
 */
export const USD = 'stripe/usd';
export const EUR = 'stripe/eur';

export const scenarioId = (prefix: number, n: number) => `${prefix.toString(16).padStart(8, '0')}-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;

/** 0: an unlimited source; 1: a wallet that cannot go below zero; 2: capped by its debits; 3: plain; 4: another asset. */
export function scenarioAccounts(prefix: number): AccountInput[] {
  return [
    { id: scenarioId(prefix, 1), asset: USD, code: 1, flags: 0, normalBalance: 'debit' },
    { id: scenarioId(prefix, 2), asset: USD, code: 2, flags: AccountFlag.debits_must_not_exceed_credits },
    { id: scenarioId(prefix, 3), asset: USD, code: 3, flags: AccountFlag.credits_must_not_exceed_debits },
    { id: scenarioId(prefix, 4), asset: USD, code: 4, flags: 0 },
    { id: scenarioId(prefix, 5), asset: EUR, code: 5, flags: 0 },
  ];
}

type Op =
  | { kind: 'single' | 'pending'; dr: number; cr: number; amount: bigint; timeout: number; linked: boolean }
  | { kind: 'post' | 'void'; target: number; amount: bigint | undefined; linked: boolean }
  | { kind: 'replay' | 'conflict'; target: number };

// mostly the dollar accounts, debiting the wallet and crediting the capped account often (to reach their limits),
// now and then the euro one (mixed assets) or the same account on both sides
const debit = fc.constantFrom(0, 1, 1, 1, 2, 3, 3, 4);
const credit = fc.constantFrom(0, 0, 1, 2, 2, 2, 3, 4);
const linked = fc.integer({ min: 0, max: 5 }).map((n) => n === 0);
const amount = fc.oneof({ weight: 1, arbitrary: fc.constant(0n) }, { weight: 9, arbitrary: fc.bigInt({ min: 1n, max: 60n }) });

const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('single' as const), dr: debit, cr: credit, amount, timeout: fc.constant(0), linked }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('pending' as const), dr: debit, cr: credit, amount, timeout: fc.constantFrom(0, 0, 1), linked }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('post' as const), target: fc.nat(), amount: fc.option(amount, { nil: undefined }), linked }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('void' as const), target: fc.nat(), amount: fc.constant(undefined), linked }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('replay' as const), target: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('conflict' as const), target: fc.nat() }) },
);

export interface Scenario {
  accounts: AccountInput[];
  /** requests in submission order */
  requests: TransferInput[][];
}

/** A scenario under id prefix `prefix`, so that runs against one database never share ids. */
export function scenario(prefix: number, options: { maxOps?: number } = {}): fc.Arbitrary<Scenario> {
  return fc
    .tuple(fc.array(op, { minLength: 1, maxLength: options.maxOps ?? 40 }), fc.array(fc.integer({ min: 1, max: 5 }), { minLength: 40, maxLength: 40 }))
    .map(([ops, sizes]) => {
      const accounts = scenarioAccounts(prefix);
      // the wallet starts with credits and the capped account with debits, so that both limits get exercised
      const funding: TransferInput[] = [
        { id: scenarioId(prefix, 10), debitAccountId: accounts[0].id, creditAccountId: accounts[1].id, amount: 100n, asset: USD, code: 1, flags: 0 },
        { id: scenarioId(prefix, 11), debitAccountId: accounts[2].id, creditAccountId: accounts[0].id, amount: 100n, asset: USD, code: 1, flags: 0 },
      ];
      const transfers: TransferInput[] = [];
      const pendings: TransferInput[] = [];
      for (const o of ops) {
        const n = transfers.length;
        const earlier = (target: number) => (n === 0 ? undefined : transfers[target % n]);
        const earlierPending = (target: number) => (pendings.length === 0 ? undefined : pendings[target % pendings.length]);
        if (o.kind === 'single' || o.kind === 'pending') {
          transfers.push({
            id: scenarioId(prefix, 100 + n),
            debitAccountId: accounts[o.dr].id,
            creditAccountId: accounts[o.cr].id,
            amount: o.amount,
            asset: accounts[o.dr].asset,
            code: 1,
            flags: (o.kind === 'pending' ? TransferFlag.pending : 0) | (o.linked ? TransferFlag.linked : 0),
            timeout: o.timeout,
          });
          if (o.kind === 'pending') pendings.push(transfers[n]);
        } else if (o.kind === 'post' || o.kind === 'void') {
          const target = earlierPending(o.target);
          if (!target) continue;
          const flag = o.kind === 'post' ? TransferFlag.post_pending_transfer : TransferFlag.void_pending_transfer;
          transfers.push({ id: scenarioId(prefix, 100 + n), pendingId: target.id, amount: o.amount, flags: flag | (o.linked ? TransferFlag.linked : 0) });
        } else if (o.kind === 'replay' || o.kind === 'conflict') {
          const target = earlier(o.target);
          if (!target) continue;
          transfers.push(o.kind === 'replay' ? { ...target } : { ...target, amount: (target.amount ?? 0n) + 1n });
        }
      }
      const requests: TransferInput[][] = [funding];
      for (let i = 0, s = 0; i < transfers.length; s++) {
        requests.push(transfers.slice(i, i + sizes[s % sizes.length]));
        i += sizes[s % sizes.length];
      }
      return { accounts, requests };
    });
}
