import type {
  AssetTotals,
  BalanceChecks,
  BreakKind,
  EntryKind,
  EntrySource,
  ReconReport,
  ReconRow,
  ReconSummary,
  RowEntryKind,
  RowKind,
  SubscriptionCharge,
  SubscriptionEvent,
  SubscriptionEventKind,
} from './model';

/**
 * The report on the wire and in the database: amounts as decimal strings (negative for net amounts that flow out),
 * times as ISO 8601. `fromJson` functions read back exactly what `toJson` wrote.
 */
export interface LedgerEntryJson {
  id: string;
  merchantId: string;
  source: EntrySource;
  asset: string;
  reference: string;
  kind: EntryKind;
  amount: string;
  state: 'pending' | 'posted';
  occurredAt: string;
  corrects?: string;
  subscription?: SubscriptionCharge;
}

export interface ExternalEntryJson {
  source: EntrySource;
  asset: string;
  reference: string;
  aliases?: string[];
  container?: string;
  kind: EntryKind;
  amount: string;
  occurredAt: string;
  details: Record<string, string>;
}

export interface ReconRowJson {
  key: string;
  kind: RowKind;
  source: EntrySource;
  asset: string;
  entryKind: RowEntryKind;
  reference: string;
  occurredAt: string;
  ledger?: LedgerEntryJson;
  corrections?: string[];
  external?: ExternalEntryJson;
  difference?: string;
  duplicateOf?: string;
  refunds?: string[];
  captured?: string;
  refunded?: string;
  expected?: string;
  actual?: string;
  details?: Record<string, string>;
}

export interface SubscriptionEventJson {
  subscriptionId: string;
  kind: SubscriptionEventKind;
  at: string;
  asset: string;
  periodIndex?: number;
  attempt?: number;
  amount?: string;
  detail?: string;
}

export interface TallyJson {
  count: number;
  net: string;
}

export interface AssetTotalsJson {
  asset: string;
  source: EntrySource;
  ledger: TallyJson;
  external: TallyJson;
  matched: TallyJson;
  pending: number;
  breaks: Record<BreakKind, number>;
  difference: string;
}

export interface ReconSummaryJson {
  period: { from: string; to: string };
  generatedAt: string;
  rows: number;
  counts: Record<RowKind, number>;
  breaks: number;
  ledgerEntries: number;
  externalEntries: number;
  corrections: number;
  checked?: BalanceChecks;
}

export interface ReconReportJson {
  rows: ReconRowJson[];
  subscriptionEvents?: SubscriptionEventJson[];
  totals: AssetTotalsJson[];
  summary: ReconSummaryJson;
}

export function rowToJson(row: ReconRow): ReconRowJson {
  return {
    key: row.key,
    kind: row.kind,
    source: row.source,
    asset: row.asset,
    entryKind: row.entryKind,
    reference: row.reference,
    occurredAt: row.occurredAt.toISOString(),
    ...(row.ledger && { ledger: { ...row.ledger, amount: row.ledger.amount.toString(), occurredAt: row.ledger.occurredAt.toISOString() } }),
    ...(row.corrections && { corrections: [...row.corrections] }),
    ...(row.external && { external: { ...row.external, amount: row.external.amount.toString(), occurredAt: row.external.occurredAt.toISOString() } }),
    ...(row.difference !== undefined && { difference: row.difference.toString() }),
    ...(row.duplicateOf !== undefined && { duplicateOf: row.duplicateOf }),
    ...(row.refunds && { refunds: [...row.refunds] }),
    ...(row.captured !== undefined && { captured: row.captured.toString() }),
    ...(row.refunded !== undefined && { refunded: row.refunded.toString() }),
    ...(row.expected !== undefined && { expected: row.expected.toString() }),
    ...(row.actual !== undefined && { actual: row.actual.toString() }),
    ...(row.details && { details: { ...row.details } }),
  };
}

export function rowFromJson(json: ReconRowJson): ReconRow {
  const { ledger, external, difference, captured, refunded, expected, actual, ...rest } = json;
  return {
    ...rest,
    ...(expected !== undefined && { expected: BigInt(expected) }),
    ...(actual !== undefined && { actual: BigInt(actual) }),
    occurredAt: new Date(json.occurredAt),
    ...(captured !== undefined && { captured: BigInt(captured) }),
    ...(refunded !== undefined && { refunded: BigInt(refunded) }),
    ...(ledger && { ledger: { ...ledger, amount: BigInt(ledger.amount), occurredAt: new Date(ledger.occurredAt) } }),
    ...(external && { external: { ...external, amount: BigInt(external.amount), occurredAt: new Date(external.occurredAt) } }),
    ...(difference !== undefined && { difference: BigInt(difference) }),
  };
}

export function totalsToJson(totals: AssetTotals): AssetTotalsJson {
  const tally = (t: { count: number; net: bigint }) => ({ count: t.count, net: t.net.toString() });
  return {
    ...totals,
    ledger: tally(totals.ledger),
    external: tally(totals.external),
    matched: tally(totals.matched),
    breaks: { ...totals.breaks },
    difference: totals.difference.toString(),
  };
}

export function totalsFromJson(json: AssetTotalsJson): AssetTotals {
  const tally = (t: TallyJson) => ({ count: t.count, net: BigInt(t.net) });
  return {
    ...json,
    ledger: tally(json.ledger),
    external: tally(json.external),
    matched: tally(json.matched),
    breaks: { ...json.breaks },
    difference: BigInt(json.difference),
  };
}

export function summaryToJson(summary: ReconSummary): ReconSummaryJson {
  return {
    ...summary,
    period: { from: summary.period.from.toISOString(), to: summary.period.to.toISOString() },
    generatedAt: summary.generatedAt.toISOString(),
    counts: { ...summary.counts },
    ...(summary.checked && { checked: { ...summary.checked } }),
  };
}

export function summaryFromJson(json: ReconSummaryJson): ReconSummary {
  return {
    ...json,
    period: { from: new Date(json.period.from), to: new Date(json.period.to) },
    generatedAt: new Date(json.generatedAt),
    counts: { ...json.counts },
  };
}

export function subscriptionEventToJson(event: SubscriptionEvent): SubscriptionEventJson {
  const { amount, ...rest } = event;
  return { ...rest, at: event.at.toISOString(), ...(amount !== undefined && { amount: amount.toString() }) };
}

export function subscriptionEventFromJson(json: SubscriptionEventJson): SubscriptionEvent {
  const { amount, ...rest } = json;
  return { ...rest, at: new Date(json.at), ...(amount !== undefined && { amount: BigInt(amount) }) };
}

export function reportToJson(report: ReconReport): ReconReportJson {
  return {
    rows: report.rows.map(rowToJson),
    ...(report.subscriptionEvents && { subscriptionEvents: report.subscriptionEvents.map(subscriptionEventToJson) }),
    totals: report.totals.map(totalsToJson),
    summary: summaryToJson(report.summary),
  };
}

export function reportFromJson(json: ReconReportJson): ReconReport {
  return {
    rows: json.rows.map(rowFromJson),
    ...(json.subscriptionEvents && { subscriptionEvents: json.subscriptionEvents.map(subscriptionEventFromJson) }),
    totals: json.totals.map(totalsFromJson),
    summary: summaryFromJson(json.summary),
  };
}
