import fc from 'fast-check';
import type { TransferResultCode } from '@mp/ledger';
import { scenario } from '../../../libs/ledger/src/testing/scenarios';
import { balancesOf, ledgerViolations, transferCount } from './support/invariants';
import { newMerchant, startLedger, type RunningLedger } from './support/ledger-app';

describe('ledger invariants over random workloads, on PostgreSQL', () => {
  let running: RunningLedger;
  beforeAll(async () => {
    running = await startLedger({ PENDING_EXPIRY_INTERVAL_MS: '0', LEDGER_WRITE_CONCURRENCY: '3' });
  });
  afterAll(() => running?.close());

  it('debits equal credits per asset, no flagged account beyond its limit, balances equal their transfers, replays change nothing', async () => {
    await fc.assert(
      fc.asyncProperty(scenario(0x1ed6e5), fc.array(fc.integer({ min: 1, max: 3 }), { minLength: 30, maxLength: 30 }), async ({ accounts, requests }, groups) => {
        const { ledger, db } = running;
        const merchant = newMerchant();
        expect((await ledger.createAccounts(merchant, accounts)).every((r) => r.result === 'created')).toBe(true);

        // Requests go in small concurrent groups, so that some share a write transaction.
        const first: TransferResultCode[][] = [];
        for (let i = 0, g = 0; i < requests.length; i += groups[g++ % groups.length]) {
          const group = requests.slice(i, i + groups[g % groups.length]);
          const answers = await Promise.all(group.map((r) => ledger.createTransfers(merchant, r)));
          answers.forEach((a, k) => (first[i + k] = a.map((r) => r.result)));
        }
        await ledger.expirePendingTransfers();
        expect(await ledgerViolations(db, merchant)).toEqual([]);

        const balances = await balancesOf(db, merchant);
        const count = await transferCount(db, merchant);
        for (const [i, request] of requests.entries()) {
          const again = await ledger.createTransfers(merchant, request);
          again.forEach(({ result }, k) => {
            if (first[i][k] === 'created' || first[i][k] === 'exists') expect(result).toBe('exists');
            else expect(result).not.toBe('created');
          });
        }
        expect(await balancesOf(db, merchant)).toEqual(balances);
        expect(await transferCount(db, merchant)).toBe(count);
        expect(await ledgerViolations(db, merchant)).toEqual([]);
      }),
      { numRuns: 40 },
    );
  });
});
