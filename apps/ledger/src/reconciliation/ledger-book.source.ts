import { Injectable } from '@nestjs/common';
import { PrismaService } from '@mp/db';
import { AccountCode, TransferCode, TransferFlag } from '@mp/ledger';
import type { AssetInfo, EntryKind, LedgerEntry, Period } from '@mp/reconciliation';
import { AssetDirectory } from './asset-directory';
import type { LedgerSource, MerchantAddress } from './reconciliation.ports';

interface TransferRow {
  id: string;
  asset: string;
  code: number;
  flags: number;
  amount: string;
  reference: string | null;
  ts: Date;
  expiresAt: Date | null;
  /** the transfer credits a revenue account (money in), else it debits one */
  credits: boolean;
  resolutionFlags: number | null;
  resolutionAmount: string | null;
  resolutionReference: string | null;
  resolutionTs: Date | null;
}

const KIND_OF_CODE: Record<number, EntryKind> = { [TransferCode.payment]: 'payment', [TransferCode.refund]: 'refund', [TransferCode.fee]: 'fee' };

/**
 * Reconciliation's view of the merchant's own book: every payment, refund and fee transfer that touches one of the
 * merchant's revenue accounts (booked by ingestion or through the API), a pending transfer as its post (or still
 * pending, or left out once voided or expired), and the correcting transfers (code 9, `reference` = the id they
 * correct) of those, whenever booked.
 */
@Injectable()
export class LedgerBookSource implements LedgerSource {
  constructor(
    private readonly db: PrismaService,
    private readonly assetDirectory: AssetDirectory,
  ) {}

  async entries(merchantId: string, period: Period): Promise<LedgerEntry[]> {
    const roots = await this.db.$queryRawUnsafe<TransferRow[]>(
      `${selectTransfers()} t.merchant_id = $1::uuid AND t.code IN (${TransferCode.payment}, ${TransferCode.refund}, ${TransferCode.fee}) AND t.flags & $4 = 0 AND t.ts < $3
         AND coalesce(r.ts, t.ts) >= $2 AND coalesce(r.ts, t.ts) < $3`,
      merchantId,
      period.from,
      period.to,
      TransferFlag.post_pending_transfer | TransferFlag.void_pending_transfer,
    );
    const corrections = await this.db.$queryRawUnsafe<(TransferRow & { corrects: string })[]>(
      `WITH RECURSIVE corrections AS (
         SELECT c.id FROM ledger.transfers c
         WHERE c.merchant_id = $1::uuid AND c.code = ${TransferCode.correction} AND c.flags = 0 AND c.reference = ANY($2::text[])
         UNION
         SELECT c.id FROM ledger.transfers c JOIN corrections p ON c.reference = p.id::text
         WHERE c.merchant_id = $1::uuid AND c.code = ${TransferCode.correction} AND c.flags = 0)
       ${selectTransfers('JOIN corrections k ON k.id = t.id')} t.merchant_id = $1::uuid`,
      merchantId,
      roots.map((r) => r.id),
    );
    return toEntries(merchantId, roots, corrections, new Date());
  }

  async addresses(merchantId: string): Promise<MerchantAddress[]> {
    return this.db.$queryRawUnsafe<MerchantAddress[]>(
      `SELECT network, address FROM ledger.receiving_addresses WHERE merchant_id = $1::uuid ORDER BY network, address`,
      merchantId,
    );
  }

  /** The assets of the merchant's revenue accounts: tokens described by the chain, Stripe currencies by their minor unit. */
  async assets(merchantId: string): Promise<AssetInfo[]> {
    const rows = await this.db.$queryRawUnsafe<{ asset: string }[]>(
      `SELECT DISTINCT asset FROM ledger.accounts WHERE merchant_id = $1::uuid AND code = ${AccountCode.revenue} ORDER BY asset`,
      merchantId,
    );
    const infos = await Promise.all(
      rows.map(
        async ({ asset }): Promise<AssetInfo> =>
          (await this.assetDirectory.describe(asset)) ?? { asset, symbol: asset.slice(asset.indexOf('/') + 1, asset.indexOf('/') + 9), decimals: 0 },
      ),
    );
    return infos;
  }

  async merchants(): Promise<string[]> {
    const rows = await this.db.$queryRawUnsafe<{ merchantId: string }[]>(
      `SELECT DISTINCT merchant_id::text AS "merchantId" FROM ledger.accounts WHERE code = ${AccountCode.revenue} ORDER BY 1`,
    );
    return rows.map((r) => r.merchantId);
  }
}

/** Transfers on a revenue account, with what resolved each when it was pending; the caller appends its conditions. */
const selectTransfers = (join = '') => `
  SELECT t.id::text AS id, t.asset, t.code, t.flags, t.amount::text AS amount, t.reference, t.ts, t.expires_at AS "expiresAt",
         ca.code = ${AccountCode.revenue} AS credits, t.reference AS corrects,
         r.flags AS "resolutionFlags", r.amount::text AS "resolutionAmount", r.reference AS "resolutionReference", r.ts AS "resolutionTs"
  FROM ledger.transfers t
  JOIN ledger.accounts ca ON ca.key = t.credit_account_key
  JOIN ledger.accounts da ON da.key = t.debit_account_key
  LEFT JOIN ledger.transfers r ON r.merchant_id = t.merchant_id AND r.pending_id = t.id
  ${join}
  WHERE (ca.code = ${AccountCode.revenue} OR da.code = ${AccountCode.revenue}) AND`;

/** Rows to entries: voided and expired holds left out, corrections signed against the direction of what they correct. */
function toEntries(merchantId: string, roots: TransferRow[], corrections: (TransferRow & { corrects: string })[], now: Date): LedgerEntry[] {
  const entries: LedgerEntry[] = [];
  const direction = new Map<string, { credits: boolean; kind: EntryKind }>();
  for (const row of roots) {
    const kind = KIND_OF_CODE[row.code];
    const pending = (row.flags & TransferFlag.pending) !== 0;
    const posted = row.resolutionFlags !== null && (row.resolutionFlags & TransferFlag.post_pending_transfer) !== 0;
    const voided = row.resolutionFlags !== null && !posted;
    const expired = pending && row.resolutionFlags === null && row.expiresAt !== null && row.expiresAt <= now;
    direction.set(row.id, { credits: row.credits, kind });
    if (voided || expired) continue;
    entries.push({
      id: row.id,
      merchantId,
      source: row.asset.startsWith('stripe/') ? 'stripe' : 'chain',
      asset: row.asset,
      reference: (posted ? row.resolutionReference : null) ?? row.reference ?? row.id,
      kind,
      amount: BigInt(posted ? row.resolutionAmount! : row.amount),
      state: pending && !posted ? 'pending' : 'posted',
      occurredAt: posted ? row.resolutionTs! : row.ts,
    });
  }
  // a correction may correct another correction: resolve in the order they build on each other
  const remaining = [...corrections];
  for (let progress = true; remaining.length && progress; ) {
    progress = false;
    for (let i = 0; i < remaining.length; i++) {
      const row = remaining[i];
      const target = direction.get(row.corrects);
      if (!target) continue;
      direction.set(row.id, target);
      const amount = BigInt(row.amount);
      entries.push({
        id: row.id,
        merchantId,
        source: row.asset.startsWith('stripe/') ? 'stripe' : 'chain',
        asset: row.asset,
        reference: row.corrects,
        kind: target.kind,
        amount: row.credits === target.credits ? amount : -amount,
        state: 'posted',
        occurredAt: row.ts,
        corrects: row.corrects,
      });
      remaining.splice(i--, 1);
      progress = true;
    }
  }
  return entries;
}
