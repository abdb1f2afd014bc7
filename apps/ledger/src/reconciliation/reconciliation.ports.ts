import type { Request, Response } from 'express';
import type {
  AssetInfo,
  BookedChannelState,
  LedgerEntry,
  Period,
  PrepaidCheckInput,
  ReconRowJson,
  ReconSummaryJson,
  SubscriptionEvent,
} from '@mp/reconciliation';

/**
 * What reconciliation needs from the rest of the ledger, bound by the app module: the ledger's own entries, the
 * merchant a request acts for, and where break notices go.
 */
export const LEDGER_SOURCE = Symbol('LEDGER_SOURCE');
export const RECON_MERCHANT = Symbol('RECON_MERCHANT');
export const RECON_BREAK_NOTIFIER = Symbol('RECON_BREAK_NOTIFIER');
/** Where a run reads "now" (what is still young, how far the chain is scanned): the ledger's clock. */
export const RECON_CLOCK = Symbol('RECON_CLOCK');

export interface ReconClock {
  now(): Date;
}

/** A merchant's receiving address on one network. */
export interface MerchantAddress {
  /** CAIP-2: eip155:8453 */
  network: string;
  address: `0x${string}`;
}

export interface LedgerSource {
  /**
   * The merchant's entries whose time is in [period.from, period.to), in any order, each transfer as it was booked
   * (never netted: two bookings of one movement are a duplicate to report), plus every correcting transfer of those
   * entries whatever its own time, with `corrects` naming the entry and a signed amount (negative takes away).
   */
  entries(merchantId: string, period: Period): Promise<LedgerEntry[]>;
  /**
   * The merchant's subscription events in [period.from, period.to) that moved no money: charge attempts that failed,
   * were refused or voided, and cancellations. Shown in the report; never breaks.
   */
  subscriptionEvents(merchantId: string, period: Period): Promise<SubscriptionEvent[]>;
  /** Where the merchant is paid on chain: Transfer logs to these addresses are the chain side. */
  addresses(merchantId: string): Promise<MerchantAddress[]>;
  /** The on-chain assets the merchant accepts (`eip155:8453/0x…`), with symbol and decimals for reports. */
  assets(merchantId: string): Promise<AssetInfo[]>;
  /** The merchants a scheduled run reconciles. */
  merchants(): Promise<string[]>;
  /** The merchant's payment channels as its books have them now: matched against the escrow's state. */
  channels(merchantId: string): Promise<BookedChannelState[]>;
  /** The merchant's prepaid balances now: stored, recomputed from their transfers, and each top-up's funding payments. */
  prepaidBalances(merchantId: string): Promise<PrepaidCheckInput[]>;
}

export interface MerchantResolver {
  /**
   * The id of the merchant the request acts for (its API key's). Throws a ProblemError (`unauthorized`, or
   * `rate_limited`) when there is none; it may set response headers such as `www-authenticate` first.
   */
  merchantOf(request: Request, response: Response): Promise<string>;
}

/** What a merchant is told when a run finds breaks that no earlier run of theirs reported. */
export interface BreakNotice {
  /** `reconciliation.breaks_found` */
  type: 'reconciliation.breaks_found';
  runId: string;
  merchantId: string;
  summary: ReconSummaryJson;
  /** the breaks no earlier run of the merchant reported */
  newBreaks: ReconRowJson[];
  /** path of the HTML report on the ledger, with a signed token: opens without an API key until it expires */
  reportPath: string;
}

export interface BreakNotifier {
  /** Called at most once per run, after its rows are stored. A failure is logged and the run stays completed. */
  notify(notice: BreakNotice): Promise<void>;
}
