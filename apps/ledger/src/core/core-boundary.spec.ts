import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

// The core's promise (ledger.module.ts): only LedgerService leaves it, so its storage could be swapped (a
// TigerBeetle cluster) behind that one class. Nothing outside core/ may name the core's tables, in SQL or through
// Prisma's delegates; reconciliation's own tables (reconciliation_runs, reconciliation_rows) are not the core's.
const repoRoot = path.resolve(__dirname, '../../../..');
const coreDir = path.join(repoRoot, 'apps/ledger/src/core');
const CORE_TABLE =
  /\bledger"?\."?(accounts|transfers|pending_timeouts|failed_transfers|receiving_addresses)\b|\bledger(Account|Transfer|PendingTimeout|FailedTransfer|ReceivingAddress)\s*\./g;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' || entry.name === 'generated' ? [] : sourceFiles(full);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.spec.ts') ? [full] : [];
  });
}

const mentions = (file: string) => [...readFileSync(file, 'utf8').matchAll(CORE_TABLE)].map((m) => m[0]);

describe('the ledger core boundary', () => {
  it('no source outside apps/ledger/src/core names a table of the core', () => {
    const roots = ['apps', 'libs'].flatMap((top) =>
      readdirSync(path.join(repoRoot, top), { withFileTypes: true })
        .filter((d) => d.isDirectory())
        .map((d) => path.join(repoRoot, top, d.name, 'src')),
    );
    const outside = roots.flatMap((root) => sourceFiles(root)).filter((file) => !file.startsWith(coreDir + path.sep));
    expect(outside.length).toBeGreaterThan(50);
    const offenders = outside.flatMap((file) => mentions(file).map((name) => `${path.relative(repoRoot, file)}: ${name}`));
    expect(offenders).toEqual([]);
  });

  it("recognises the core's own queries (the check above can see what it forbids)", () => {
    const inCore = sourceFiles(coreDir).flatMap(mentions);
    for (const table of ['ledger.accounts', 'ledger.transfers', 'ledger.pending_timeouts', 'ledger.failed_transfers', 'ledger.receiving_addresses']) {
      expect(inCore).toContain(table);
    }
    for (const delegate of ['ledgerAccount.', 'ledgerReceivingAddress.']) expect(inCore).toContain(delegate);
    expect('this.db.ledgerTransfer.findMany()'.match(CORE_TABLE)).toEqual(['ledgerTransfer.']);
    expect('FROM "ledger"."accounts" a'.match(CORE_TABLE)).toEqual(['ledger"."accounts']);
    expect('FROM ledger.reconciliation_runs'.match(CORE_TABLE)).toBeNull();
  });
});
