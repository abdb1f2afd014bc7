import { Injectable } from '@nestjs/common';
import { PrismaService } from '@mp/db';
import { AccountCode, paymentTransferId, TransferCode, TransferFlag } from '@mp/ledger';
import type {
  AssetInfo,
  BookedChannelState,
  EntryKind,
  LedgerEntry,
  Period,
  PrepaidCheckInput,
  SubscriptionCharge,
  SubscriptionEvent,
  SubscriptionEventKind,
} from '@mp/reconciliation';
import { ChannelBooks } from '../channels/channel-books.service';
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
    private readonly db: PrismaService,
    private readonly channelBooks: ChannelBooks,
  ) {}

  async entries(merchantId: string, period: Period): Promise<LedgerEntry[]> {
    const roots = await this.ledger.accountCodeTransfers(merchantId, { accountCode: AccountCode.revenue, codes: ENTRY_CODES, period });
    const corrections = await this.ledger.correctionsOf(
      merchantId,
      AccountCode.revenue,
      roots.map((r) => r.id),
    );
    const charges = await this.subscriptionCharges(merchantId, period);
    return toEntries(merchantId, roots, corrections, new Date()).map((entry) => {
      const subscription = charges.get(entry.id);
      return subscription ? { ...entry, subscription } : entry;
    });
  }

  /**
   * The subscription charges whose payment the ledger booked around the period, by the id of that payment's booking:
   * its hold (posted later) or its late booking after a void (ingestion derives both ids from the payment id).
   */
  private async subscriptionCharges(merchantId: string, period: Period): Promise<Map<string, SubscriptionCharge>> {
    const within = { gte: period.from, lt: period.to };
    const charges = await this.db.ledgerSubscriptionCharge.findMany({
      where: { merchantId, paymentId: { not: null }, OR: [{ requestedAt: within }, { settledAt: within }, { latePaidAt: within }] },
      select: { subscriptionId: true, periodIndex: true, attempt: true, paymentId: true },
    });
    const byTransfer = new Map<string, SubscriptionCharge>();
    for (const charge of charges) {
      const subscription = { id: charge.subscriptionId, periodIndex: charge.periodIndex, attempt: charge.attempt };
      for (const step of ['pending', 'late']) byTransfer.set(paymentTransferId(charge.paymentId!, step), subscription);
    }
    return byTransfer;
  }

  async subscriptionEvents(merchantId: string, period: Period): Promise<SubscriptionEvent[]> {
    const within = { gte: period.from, lt: period.to };
    const [charges, cancels] = await Promise.all([
      this.db.ledgerSubscriptionCharge.findMany({
        where: { merchantId, state: { in: ['failed', 'refused', 'voided'] }, OR: [{ settledAt: within }, { settledAt: null, periodEnd: within }] },
        include: { subscription: { select: { asset: true } } },
      }),
      this.db.ledgerSubscription.findMany({
        where: { merchantId, OR: [{ cancelRequestedAt: within }, { state: 'canceled', endedAt: within }] },
        select: {
          id: true,
          asset: true,
          state: true,
          cancelAt: true,
          cancelBy: true,
          cancelReason: true,
          cancelRequestedAt: true,
          endedAt: true,
          endedReason: true,
        },
      }),
    ]);
    const events: SubscriptionEvent[] = charges.map((c) => ({
      subscriptionId: c.subscriptionId,
      kind: CHARGE_EVENT[c.state],
      at: c.settledAt ?? c.periodEnd,
      asset: c.subscription.asset,
      periodIndex: c.periodIndex,
      attempt: c.attempt,
      amount: BigInt(c.amount.toFixed()),
      ...(c.outcomeReason && { detail: c.outcomeReason }),
    }));
    const inPeriod = (at: Date | null): at is Date => at !== null && at >= period.from && at < period.to;
    for (const s of cancels) {
      if (inPeriod(s.cancelRequestedAt))
        events.push({
          subscriptionId: s.id,
          kind: 'cancel_requested',
          at: s.cancelRequestedAt,
          asset: s.asset,
          detail: [s.cancelAt && `at ${s.cancelAt}`, s.cancelBy && `by ${s.cancelBy}`, s.cancelReason].filter(Boolean).join(', '),
        });
      if (s.state === 'canceled' && inPeriod(s.endedAt))
        events.push({ subscriptionId: s.id, kind: 'canceled', at: s.endedAt, asset: s.asset, ...(s.endedReason && { detail: s.endedReason }) });
    }
    return events.sort((a, b) => a.at.getTime() - b.at.getTime() || (a.subscriptionId < b.subscriptionId ? -1 : a.subscriptionId > b.subscriptionId ? 1 : 0));
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

  async channels(merchantId: string): Promise<BookedChannelState[]> {
    return (await this.channelBooks.list(merchantId)).map((c) => ({
      scheme: c.scheme,
      channelId: c.channelId,
      network: c.network,
      escrow: c.escrow,
      asset: c.asset,
      payer: c.payer,
      payee: c.payee,
      state: c.state,
      deposit: c.deposit,
      accepted: c.accepted,
      settled: c.settled,
      refunded: c.refunded,
    }));
  }

  /** Each prepaid balance as stored and as its transfers add up, with its top-ups and the confirmed payments they name. */
  async prepaidBalances(merchantId: string): Promise<PrepaidCheckInput[]> {
    return (
      await this.ledger.accountAudits(merchantId, { accountCode: AccountCode.prepaid, fundedBy: TransferCode.topUp, fundingCode: TransferCode.payment })
    ).map((a) => ({
      accountId: a.id,
      payer: a.reference ?? '',
      asset: a.asset,
      stored: a.stored,
      held: a.held,
      recomputed: a.recomputed,
      topUps: a.fundings.map((f) => ({ transferId: f.id, amount: f.amount, paymentReference: f.reference, occurredAt: f.ts, funding: f.payments })),
    }));
  }
}

const CHARGE_EVENT: Record<string, SubscriptionEventKind> = { failed: 'charge_failed', refused: 'charge_refused', voided: 'charge_voided' };

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
