import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { X402Reason, type SettleResponse, type VerifyResponse } from '@mp/x402';
import { ProblemError } from './problem';
import { withTimeout } from './readiness';

/**
 * Prometheus metrics without Nest: one {@link Metrics} (one prom-client `Registry`) per app, with the default
 * process metrics and `http_request_duration_seconds`, and the facilitator's catalogue ({@link FacilitatorMetrics}).
 *
 * Every label has a bounded set of values: routes are templates (`/verify`, never a raw URL), methods, outcomes,
 * queue states and reasons are closed sets (anything else becomes `other`), and networks are the configured ones
 * (anything else becomes `unknown`). A metric name here is an interface: dashboards and alerts depend on it.
 */
export const METRIC_NAMES = {
  httpRequestDuration: 'http_request_duration_seconds',
  collectErrors: 'metrics_collect_errors_total',
  verifyDuration: 'x402_verify_duration_seconds',
  settleDuration: 'x402_settle_duration_seconds',
  verifyTotal: 'x402_verify_total',
  settleTotal: 'x402_settle_total',
  queueDepth: 'settlement_queue_depth',
  settlementsPending: 'settlements_pending',
  gasSpent: 'settlement_gas_spent_wei_total',
  signerBalance: 'signer_balance_wei',
} as const;

export const HTTP_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;
/** The route label of a request no route answered (404s, bodies refused before routing on unknown paths). */
export const UNMATCHED_ROUTE = 'unmatched';

export const VERIFY_OUTCOMES = ['valid', 'invalid', 'error'] as const;
/** `success`: settled on chain; `invalid`: refused or failed on chain (reason says why); `pending`: `settlement_pending`; `error`: our side (RPC, bug). */
export const SETTLE_OUTCOMES = ['success', 'invalid', 'pending', 'error'] as const;
export const QUEUE_STATES = ['waiting', 'active', 'delayed'] as const;

export type VerifyOutcome = (typeof VERIFY_OUTCOMES)[number];
export type SettleOutcome = (typeof SETTLE_OUTCOMES)[number];
export type QueueState = (typeof QUEUE_STATES)[number];

/** The reason label of a valid verification or a successful settlement. */
export const NO_REASON = 'none';
/** Every reason label value: the x402 reasons, the problem codes /verify and /settle can raise, `none` and `other`. */
export const METRIC_REASONS: readonly string[] = [
  NO_REASON,
  ...Object.values(X402Reason),
  'validation_failed',
  'payment_identifier_conflict',
  'settlement_in_progress',
  'upstream_unavailable',
  'internal_error',
  'other',
];
const REASONS = new Set(METRIC_REASONS);

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const SETTLE_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5, 10, 20, 30, 60, 120];

export type CollectCallback = () => void | Promise<void>;

export interface MetricsOptions {
  /** Process metrics (`process_*`, `nodejs_*`) in this registry; default true. */
  defaultMetrics?: boolean;
  /** How long one collect callback may take at scrape time before the scrape goes on without it; default 2000 ms. */
  collectTimeoutMs?: number;
}

/** One app's registry: default process metrics, HTTP request durations, and callbacks run at scrape time. */
export class Metrics {
  readonly registry = new Registry();
  readonly httpRequestDuration: Histogram<'method' | 'route' | 'status'>;
  private readonly collectErrors: Counter<'collector'>;
  private readonly collectors = new Map<string, CollectCallback>();
  private readonly collectTimeoutMs: number;

  constructor(options: MetricsOptions = {}) {
    this.collectTimeoutMs = options.collectTimeoutMs ?? 2_000;
    if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: this.registry });
    this.httpRequestDuration = new Histogram({
      name: METRIC_NAMES.httpRequestDuration,
      help: 'HTTP requests by method, route template (or "unmatched") and status code, from the first byte read to the last byte written.',
      labelNames: ['method', 'route', 'status'],
      buckets: LATENCY_BUCKETS,
      registers: [this.registry],
    });
    this.collectErrors = new Counter({
      name: METRIC_NAMES.collectErrors,
      help: 'Collect callbacks that failed or timed out at scrape time, by callback name; their metrics keep their previous values.',
      labelNames: ['collector'],
      registers: [this.registry],
    });
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /**
   * Registers a callback run at every scrape, before the metrics are written: the place to set gauges that are read
   * rather than counted (queue depth, pending settlements, balances). Callbacks run concurrently, each bounded by
   * `collectTimeoutMs`; one that throws or times out is counted in `metrics_collect_errors_total{collector}` and the
   * gauges it sets keep their last values. Registering a name again replaces the callback. Returns an unregister function.
   */
  onCollect(name: string, callback: CollectCallback): () => void {
    this.collectors.set(name, callback);
    return () => {
      if (this.collectors.get(name) === callback) this.collectors.delete(name);
    };
  }

  /** Runs the collect callbacks, then renders the registry in the Prometheus text format ({@link contentType}). */
  async scrape(): Promise<string> {
    await Promise.all(
      [...this.collectors].map(async ([name, callback]) => {
        try {
          await withTimeout(Promise.resolve().then(callback), this.collectTimeoutMs);
        } catch {
          this.collectErrors.inc({ collector: name });
        }
      }),
    );
    return this.registry.metrics();
  }

  observeHttpRequest(method: string, route: string, status: number, seconds: number): void {
    const m = method.toUpperCase();
    this.httpRequestDuration.observe({ method: (HTTP_METHODS as readonly string[]).includes(m) ? m : 'other', route, status: String(status) }, seconds);
  }
}

export interface FacilitatorMetricsOptions {
  /**
   * Maps a network as a request names it (CAIP-2 or an x402 v1 name) to the configured CAIP-2 id, or undefined if
   * it is not served. Without it every network label is `unknown`, so the label never carries client input.
   */
  resolveNetwork?: (network: string) => string | undefined;
}

export interface SignerBalanceSource {
  network: string;
  signer: string;
  read(): Promise<bigint>;
}

/**
 * The facilitator's metrics, registered in an app's {@link Metrics}. The x402 API records verify and settle through
 * {@link measureVerify}/{@link measureSettle}; the settlement queue and workers call {@link setQueueDepth} (usually
 * from an {@link onCollect} callback), {@link setSettlementsPending}, {@link addGasSpent} / {@link recordGasUsed} and
 * {@link setSignerBalance}.
 */
export class FacilitatorMetrics {
  readonly verifyDuration: Histogram<'network' | 'outcome'>;
  readonly settleDuration: Histogram<'network' | 'outcome'>;
  readonly verifyTotal: Counter<'network' | 'outcome' | 'reason'>;
  readonly settleTotal: Counter<'network' | 'outcome' | 'reason'>;
  readonly queueDepth: Gauge<'state'>;
  readonly settlementsPending: Gauge;
  readonly gasSpent: Counter<'network'>;
  readonly signerBalance: Gauge<'network' | 'signer'>;

  constructor(
    readonly metrics: Metrics,
    private readonly options: FacilitatorMetricsOptions = {},
  ) {
    const registers = [metrics.registry];
    this.verifyDuration = new Histogram({
      name: METRIC_NAMES.verifyDuration,
      help: 'POST /verify handling time, by network and outcome (valid, invalid, error).',
      labelNames: ['network', 'outcome'],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.settleDuration = new Histogram({
      name: METRIC_NAMES.settleDuration,
      help: 'POST /settle handling time including the wait for the receipt, by network and outcome (success, invalid, pending, error).',
      labelNames: ['network', 'outcome'],
      buckets: SETTLE_BUCKETS,
      registers,
    });
    this.verifyTotal = new Counter({
      name: METRIC_NAMES.verifyTotal,
      help: 'POST /verify answers by network, outcome (valid, invalid, error) and reason (an x402 reason or problem code; "none" when valid).',
      labelNames: ['network', 'outcome', 'reason'],
      registers,
    });
    this.settleTotal = new Counter({
      name: METRIC_NAMES.settleTotal,
      help: 'POST /settle answers by network, outcome (success, invalid, pending, error) and reason (an x402 reason or problem code; "none" on success).',
      labelNames: ['network', 'outcome', 'reason'],
      registers,
    });
    this.queueDepth = new Gauge({
      name: METRIC_NAMES.queueDepth,
      help: 'Settlement jobs in the queue by state (waiting, active, delayed), read at scrape time.',
      labelNames: ['state'],
      registers,
    });
    this.settlementsPending = new Gauge({
      name: METRIC_NAMES.settlementsPending,
      help: 'Settlements accepted but without a final outcome yet (claimed or submitted, no receipt recorded).',
      registers,
    });
    this.gasSpent = new Counter({
      name: METRIC_NAMES.gasSpent,
      help: 'Native currency spent on settlement gas (gasUsed x effectiveGasPrice of mined settlement transactions), in wei, by network.',
      labelNames: ['network'],
      registers,
    });
    this.signerBalance = new Gauge({
      name: METRIC_NAMES.signerBalance,
      help: 'Native balance of each hot wallet, in wei, by network and signer address.',
      labelNames: ['network', 'signer'],
      registers,
    });
  }

  /** The network label of a network as a request or the code names it: the configured CAIP-2 id, else `unknown`. */
  networkLabel(network: unknown): string {
    if (typeof network !== 'string' || network === '') return 'unknown';
    return this.options.resolveNetwork?.(network) ?? 'unknown';
  }

  recordVerify(network: unknown, outcome: VerifyOutcome, reason: string, seconds: number): void {
    const labels = { network: this.networkLabel(network), outcome };
    this.verifyDuration.observe(labels, seconds);
    this.verifyTotal.inc({ ...labels, reason: reasonLabel(reason) });
  }

  recordSettle(network: unknown, outcome: SettleOutcome, reason: string, seconds: number): void {
    const labels = { network: this.networkLabel(network), outcome };
    this.settleDuration.observe(labels, seconds);
    this.settleTotal.inc({ ...labels, reason: reasonLabel(reason) });
  }

  /** Times one /verify (`body` is the raw request; its `paymentRequirements.network` is the label) and records its outcome. */
  measureVerify<T extends VerifyResponse>(body: unknown, run: () => Promise<T>): Promise<T> {
    return this.measure(body, run, verifyOutcome, (network, outcome, reason, seconds) => this.recordVerify(network, outcome, reason, seconds));
  }

  /** Times one /settle and records its outcome, like {@link measureVerify}. */
  measureSettle<T extends SettleResponse>(body: unknown, run: () => Promise<T>): Promise<T> {
    return this.measure(body, run, settleOutcome, (network, outcome, reason, seconds) => this.recordSettle(network, outcome, reason, seconds));
  }

  /** Sets the queue depth gauge for the states given; call it from an {@link onCollect} callback that reads the queue. */
  setQueueDepth(depth: Partial<Record<QueueState, number>>): void {
    for (const state of QUEUE_STATES) {
      const value = depth[state];
      if (value !== undefined) this.queueDepth.set({ state }, value);
    }
  }

  setSettlementsPending(count: number): void {
    this.settlementsPending.set(count);
  }

  /** Adds the gas cost of one mined settlement transaction, in wei (converted to a float64, as Prometheus stores it). */
  addGasSpent(network: string, wei: bigint): void {
    if (wei > 0n) this.gasSpent.inc({ network: this.networkLabel(network) }, Number(wei));
  }

  /** {@link addGasSpent} from a receipt's `gasUsed` and `effectiveGasPrice`. */
  recordGasUsed(network: string, receipt: { gasUsed: bigint; effectiveGasPrice?: bigint | null }): void {
    this.addGasSpent(network, receipt.gasUsed * (receipt.effectiveGasPrice ?? 0n));
  }

  setSignerBalance(network: string, signer: string, wei: bigint): void {
    this.signerBalance.set({ network: this.networkLabel(network), signer }, Number(wei));
  }

  /** Registers a callback run at scrape time (see {@link Metrics.onCollect}). */
  onCollect(name: string, callback: CollectCallback): () => void {
    return this.metrics.onCollect(name, callback);
  }

  /**
   * Reads every signer's balance at scrape time, at most once per `maxAgeMs` (several scrapers share one read). A
   * failed read keeps the previous value and counts in `metrics_collect_errors_total{collector="signer_balances"}`.
   */
  trackSignerBalances(sources: SignerBalanceSource[], options: { maxAgeMs?: number } = {}): () => void {
    const maxAgeMs = options.maxAgeMs ?? 10_000;
    let readAt = -Infinity;
    let running: Promise<void> | undefined;
    const refresh = async () => {
      const results = await Promise.allSettled(sources.map(async (s) => this.setSignerBalance(s.network, s.signer, await s.read())));
      const failed = results.filter((r) => r.status === 'rejected').length;
      if (failed) throw new Error(`${failed} of ${sources.length} signer balances could not be read`);
    };
    return this.onCollect('signer_balances', () => {
      if (running) return running;
      if (Date.now() - readAt < maxAgeMs) return;
      readAt = Date.now();
      running = refresh().finally(() => (running = undefined));
      return running;
    });
  }

  private async measure<T, O extends string>(
    body: unknown,
    run: () => Promise<T>,
    classify: (response: T) => [O, string],
    record: (network: unknown, outcome: O | 'invalid' | 'error', reason: string, seconds: number) => void,
  ): Promise<T> {
    const started = process.hrtime.bigint();
    const seconds = () => Number(process.hrtime.bigint() - started) / 1e9;
    const network = requestedNetwork(body);
    let response: T;
    try {
      response = await run();
    } catch (error) {
      // A malformed request or a reused payment identifier is the client's doing; anything else is ours.
      if (error instanceof ProblemError && error.status < 500) record(network, 'invalid', error.code, seconds());
      else record(network, 'error', error instanceof ProblemError ? error.code : 'internal_error', seconds());
      throw error;
    }
    const [outcome, reason] = classify(response);
    record(network, outcome, reason, seconds());
    return response;
  }
}

/** Outcome and reason label of a /verify answer. */
export function verifyOutcome(response: VerifyResponse): [VerifyOutcome, string] {
  if (response.isValid) return ['valid', NO_REASON];
  const reason = response.invalidReason ?? 'other';
  return [reason === X402Reason.unexpectedVerifyError ? 'error' : 'invalid', reason];
}

/** Outcome and reason label of a /settle answer. */
export function settleOutcome(response: SettleResponse): [SettleOutcome, string] {
  if (response.success) return ['success', NO_REASON];
  const reason = response.errorReason ?? 'other';
  if (reason === X402Reason.settlementPending) return ['pending', reason];
  if (reason === X402Reason.unexpectedSettleError || reason === X402Reason.unexpectedVerifyError) return ['error', reason];
  return ['invalid', reason];
}

/** A reason label from the closed set {@link METRIC_REASONS}; anything else is `other`. */
export function reasonLabel(reason: string | undefined): string {
  return reason !== undefined && REASONS.has(reason) ? reason : 'other';
}

function requestedNetwork(body: unknown): unknown {
  const requirements = (body as { paymentRequirements?: { network?: unknown } } | null | undefined)?.paymentRequirements;
  return requirements?.network;
}
