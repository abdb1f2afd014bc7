import { Injectable } from '@nestjs/common';
import { AccountCode, TransferCode, TransferFlag } from '@mp/ledger';
import type { AssetInfo, EntryKind, LedgerEntry, Period } from '@mp/reconciliation';
import { LedgerService, type AccountCodeTransfer, type CorrectionTransfer } from '../core/ledger.service';
import { AssetDirectory } from './asset-directory';
import type { LedgerSource, MerchantAddress } from './reconciliation.ports';

const KIND_OF_CODE: Record<number, EntryKind> = { [TransferCode.payment]: 'payment', [TransferCode.refund]: 'refund', [TransferCode.fee]: 'fee' };
const ENTRY_CODES = [TransferCode.payment, TransferCode.refund, TransferCode.fee];

/**
 * Reconciliation's view of the merchant's own book, read through LedgerService: every payment, refund and fee
 * transfer that touches one of the merchant's revenue accounts (booked by ingestion or through the API), a pending
 * transfer as its post (or still pending, or left out once voided or expired), and the correcting transfers (code 9,
 * `reference` = the id they correct) of those, whenever booked.
 */
@Injectable()
export class LedgerBookSource implements LedgerSource {
  constructor(
    private readonly ledger: LedgerService,
    private readonly assetDirectory: AssetDirectory,
  ) {}

  async entries(merchantId: string, period: Period): Promise<LedgerEntry[]> {
    const roots = await this.ledger.accountCodeTransfers(merchantId, { accountCode: AccountCode.revenue, codes: ENTRY_CODES, period });
    const corrections = await this.ledger.correctionsOf(
      merchantId,
      AccountCode.revenue,
      roots.map((r) => r.id),
    );
    return toEntries(merchantId, roots, corrections, new Date());
  }

  async addresses(merchantId: string): Promise<MerchantAddress[]> {
    return this.ledger.receivingAddressesOf(merchantId);
  }

  /** The assets of the merchant's revenue accounts: tokens described by the chain, Stripe currencies by their minor unit. */
  async assets(merchantId: string): Promise<AssetInfo[]> {
    const assets = await this.ledger.accountAssets(merchantId, AccountCode.revenue);
    const infos = await Promise.all(
      assets.map(
        async (asset): Promise<AssetInfo> =>
          (await this.assetDirectory.describe(asset)) ?? { asset, symbol: asset.slice(asset.indexOf('/') + 1, asset.indexOf('/') + 9), decimals: 0 },
      ),
    );
    return infos;
  }

  merchants(): Promise<string[]> {
    return this.ledger.merchantsWithAccountCode(AccountCode.revenue);
  }
}

/** Rows to entries: voided and expired holds left out, corrections signed against the direction of what they correct. */
function toEntries(merchantId: string, roots: AccountCodeTransfer[], corrections: CorrectionTransfer[], now: Date): LedgerEntry[] {
  const entries: LedgerEntry[] = [];
  const direction = new Map<string, { credits: boolean; kind: EntryKind }>();
  for (const row of roots) {
    const kind = KIND_OF_CODE[row.code];
    const pending = (row.flags & TransferFlag.pending) !== 0;
    const resolution = row.resolution;
    const posted = resolution !== undefined && (resolution.flags & TransferFlag.post_pending_transfer) !== 0;
    const voided = resolution !== undefined && !posted;
    const expired = pending && resolution === undefined && row.expiresAt !== null && row.expiresAt <= now;
    direction.set(row.id, { credits: row.credits, kind });
    if (voided || expired) continue;
    entries.push({
      id: row.id,
      merchantId,
      source: row.asset.startsWith('stripe/') ? 'stripe' : 'chain',
      asset: row.asset,
      reference: (posted ? resolution.reference : null) ?? row.reference ?? row.id,
      kind,
      amount: posted ? resolution.amount : row.amount,
      state: pending && !posted ? 'pending' : 'posted',
      occurredAt: posted ? resolution.ts : row.ts,
    });
  }
  // a correction may correct another correction: resolve in the order they build on each other
  const remaining = [...corrections];
  for (let progress = true; remaining.length && progress;) {
    progress = false;
    for (let i = 0; i < remaining.length; i++) {
      const row = remaining[i];
      const target = direction.get(row.corrects);
      if (!target) continue;
      direction.set(row.id, target);
      const amount = row.amount;
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
