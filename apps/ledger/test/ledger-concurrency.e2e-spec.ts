import { randomUUID } from 'node:crypto';
import { AccountFlag, TransferFlag, type TransferInput, type TransferResult } from '@mp/ledger';
import { TransferStore } from '../src/core/transfer.store';
import { ledgerViolations } from './support/invariants';
import { newMerchant, startLedger, type RunningLedger } from '../../../test/support/ledger-app';

const USD = 'stripe/usd';

type Path = 'one transaction per transfer' | 'coalescing writer';
const WRITERS = 32;
/** Through the store every transfer is a transaction of its own, each holding the hot row ~10 ms: fewer keep CI fast. */
const TRANSFERS: Record<Path, number> = { 'coalescing writer': 1_000, 'one transaction per transfer': 320 };

/**
 * Many writers on one hot account, on two ledger instances (as two replicas: each with a write pool of 8). Through
 * the store, each of the 32 writers' transfers is a transaction of its own, so 16 transactions contend for the same
 * account row at once; through the coalescing writer, each replica batches what arrives together, and the
 * replicas' batches contend.
 */
describe('ledger under concurrent writers', () => {
  let replicas: RunningLedger[];
  beforeAll(async () => {
    replicas = await Promise.all([1, 2].map(() => startLedger({ PENDING_EXPIRY_INTERVAL_MS: '0', DATABASE_POOL_SIZE: '2', LEDGER_WRITE_CONCURRENCY: '7' })));
  });
  afterAll(() => Promise.all(replicas?.map((r) => r.close()) ?? []));

  const write = async (path: Path, writer: number, merchantId: string, transfers: TransferInput[]) => {
    const replica = replicas[writer % replicas.length];
    return path === 'coalescing writer'
      ? replica.ledger.createTransfers(merchantId, transfers)
      : (await replica.app.get(TransferStore).write([{ merchantId, transfers }]))[0];
  };
  const amountOf = (i: number) => BigInt(1 + ((i * 7919) % 100));

  async function accounts(merchant: string, count: number, flags = 0) {
    const inputs = Array.from({ length: count }, () => ({ id: randomUUID(), asset: USD, code: 1, flags }));
    expect((await replicas[0].ledger.createAccounts(merchant, inputs)).every((r) => r.result === 'created')).toBe(true);
    return inputs.map((a) => a.id);
  }

  /** Runs single-transfer requests from WRITERS concurrent writers; returns each transfer with its result. */
  async function run(path: Path, merchant: string, make: (i: number) => TransferInput) {
    const done: { transfer: TransferInput; result: TransferResult }[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: WRITERS }, async (_, writer) => {
        for (let i = next++; i < TRANSFERS[path]; i = next++) {
          const transfer = make(i);
          const [result] = await write(path, writer, merchant, [transfer]);
          done.push({ transfer, result });
        }
      }),
    );
    return done;
  }

  it.each<Path>(['one transaction per transfer', 'coalescing writer'])(
    '1,000 transfers (320 one by one) into one hot account end with exact balances (%s)',
    async (path) => {
      const m = newMerchant();
      const [hot] = await accounts(m, 1);
      const payers = await accounts(m, WRITERS);
      const done = await run(path, m, (i) => ({
        id: randomUUID(),
        debitAccountId: payers[i % WRITERS],
        creditAccountId: hot,
        amount: amountOf(i),
        asset: USD,
        code: 1,
        flags: 0,
      }));
      expect(done.filter((d) => d.result.result !== 'created')).toEqual([]);
      const expected = done.reduce((sum, d) => sum + d.transfer.amount!, 0n);
      const [account] = await replicas[0].ledger.lookupAccounts(m, [hot]);
      expect(account.creditsPosted).toBe(expected);
      const byPayer = new Map((await replicas[0].ledger.lookupAccounts(m, payers)).map((a) => [a.id, a.debitsPosted]));
      for (const [k, payer] of payers.entries()) {
        expect(byPayer.get(payer)).toBe(done.filter((d) => d.transfer.debitAccountId === payers[k]).reduce((s, d) => s + d.transfer.amount!, 0n));
      }
      expect(await ledgerViolations(replicas[0].db, m)).toEqual([]);
    },
  );

  it.each<Path>(['one transaction per transfer', 'coalescing writer'])(
    'never overdraws a limited hot account: exactly the transfers that fit succeed (%s)',
    async (path) => {
      const m = newMerchant();
      const [source] = await accounts(m, 1);
      const [wallet] = await accounts(m, 1, AccountFlag.debits_must_not_exceed_credits);
      const sinks = await accounts(m, 8);
      const funded = 20_000n;
      await replicas[0].ledger.createTransfers(m, [
        { id: randomUUID(), debitAccountId: source, creditAccountId: wallet, amount: funded, asset: USD, code: 1, flags: 0 },
      ]);
      // half are holds, so the limit counts pending debits too
      const done = await run(path, m, (i) => ({
        id: randomUUID(),
        debitAccountId: wallet,
        creditAccountId: sinks[i % 8],
        amount: amountOf(i) * 2n,
        asset: USD,
        code: 1,
        flags: i % 2 ? TransferFlag.pending : 0,
      }));
      const created = done.filter((d) => d.result.result === 'created');
      const refused = done.filter((d) => d.result.result !== 'created');
      expect(refused.every((d) => d.result.result === 'exceeds_credits')).toBe(true);
      expect(created.length).toBeGreaterThan(0);
      expect(refused.length).toBeGreaterThan(0);
      const [account] = await replicas[0].ledger.lookupAccounts(m, [wallet]);
      const spent = created.reduce((s, d) => s + d.transfer.amount!, 0n);
      expect(account.debitsPosted + account.debitsPending).toBe(spent);
      expect(spent <= funded).toBe(true);
      // each refusal saw less available than it asked for, and availability only fell afterwards
      const smallestRefused = refused.reduce((min, d) => (d.transfer.amount! < min ? d.transfer.amount! : min), funded);
      expect(account.balances.available < smallestRefused).toBe(true);
      expect(await ledgerViolations(replicas[0].db, m)).toEqual([]);
    },
  );

  it('never deadlocks on batches crossing the same accounts in opposite orders', async () => {
    const m = newMerchant();
    const ring = await accounts(m, 6);
    // Each request is a linked chain around the ring in a random direction: every batch locks several accounts.
    const chain = (i: number): TransferInput[] =>
      ring.map((_, k) => {
        const [from, to] = i % 2 ? [ring[k], ring[(k + 1) % ring.length]] : [ring[(k + 1) % ring.length], ring[k]];
        return {
          id: randomUUID(),
          debitAccountId: from,
          creditAccountId: to,
          amount: BigInt(k + 1),
          asset: USD,
          code: 1,
          flags: k < ring.length - 1 ? TransferFlag.linked : 0,
        };
      });
    const results = await Promise.all(Array.from({ length: 200 }, (_, i) => write('one transaction per transfer', i, m, chain(i))));
    expect(results.flat().every((r) => r.result === 'created')).toBe(true);
    expect(await ledgerViolations(replicas[0].db, m)).toEqual([]);
  });
});
