import { X402Reason } from '@mp/x402';
import { FacilitatorMetrics, METRIC_NAMES, Metrics, reasonLabel, settleOutcome, verifyOutcome } from './metrics';
import { ProblemError } from './problem';

const line = (text: string, name: string, labels: string) => text.split('\n').find((l) => l.startsWith(`${name}{${labels}} `));
const value = (text: string, name: string, labels: string) => Number(line(text, name, labels)?.split(' ').pop() ?? NaN);

describe('Metrics', () => {
  it('has its own registry with the process metrics and http_request_duration_seconds', async () => {
    const a = new Metrics();
    const b = new Metrics({ defaultMetrics: false });
    a.observeHttpRequest('post', '/verify', 200, 0.012);
    a.observeHttpRequest('BREW', '/coffee', 418, 0.001);
    const text = await a.scrape();
    expect(text).toContain('# TYPE process_cpu_seconds_total counter');
    expect(value(text, 'http_request_duration_seconds_count', 'method="POST",route="/verify",status="200"')).toBe(1);
    expect(value(text, 'http_request_duration_seconds_bucket', 'le="0.025",method="POST",route="/verify",status="200"')).toBe(1);
    expect(value(text, 'http_request_duration_seconds_bucket', 'le="0.01",method="POST",route="/verify",status="200"')).toBe(0);
    expect(value(text, 'http_request_duration_seconds_count', 'method="other",route="/coffee",status="418"')).toBe(1);
    const other = await b.scrape();
    expect(other).not.toContain('process_cpu_seconds_total');
    expect(other).not.toContain('route="/verify"');
    expect(a.contentType).toBe('text/plain; version=0.0.4; charset=utf-8');
  });

  it('runs collect callbacks at scrape time; a failing or slow one is counted and the scrape goes on', async () => {
    const metrics = new Metrics({ defaultMetrics: false, collectTimeoutMs: 50 });
    const facilitator = new FacilitatorMetrics(metrics, { resolveNetwork: (n) => n });
    let depth = 0;
    facilitator.onCollect('queue', () => facilitator.setQueueDepth({ waiting: ++depth, active: 2 }));
    metrics.onCollect('broken', () => {
      throw new Error('boom');
    });
    const unregister = metrics.onCollect('slow', () => new Promise((resolve) => setTimeout(resolve, 1_000)));
    let text = await metrics.scrape();
    expect(value(text, METRIC_NAMES.queueDepth, 'state="waiting"')).toBe(1);
    expect(value(text, METRIC_NAMES.queueDepth, 'state="active"')).toBe(2);
    expect(line(text, METRIC_NAMES.queueDepth, 'state="delayed"')).toBeUndefined();
    expect(value(text, METRIC_NAMES.collectErrors, 'collector="broken"')).toBe(1);
    expect(value(text, METRIC_NAMES.collectErrors, 'collector="slow"')).toBe(1);
    unregister();
    text = await metrics.scrape();
    expect(value(text, METRIC_NAMES.queueDepth, 'state="waiting"')).toBe(2);
    expect(value(text, METRIC_NAMES.collectErrors, 'collector="slow"')).toBe(1);
    expect(value(text, METRIC_NAMES.collectErrors, 'collector="broken"')).toBe(2);
  });
});

describe('FacilitatorMetrics', () => {
  const setup = () => {
    const metrics = new Metrics({ defaultMetrics: false });
    const facilitator = new FacilitatorMetrics(metrics, { resolveNetwork: (n) => ({ 'eip155:8453': 'eip155:8453', base: 'eip155:8453' })[n] });
    return { metrics, facilitator };
  };
  const body = (network: unknown) => ({ x402Version: 2, paymentRequirements: { network } });

  it('registers the whole catalogue under stable names', async () => {
    const { metrics } = setup();
    const text = await metrics.scrape();
    for (const [name, type] of [
      ['x402_verify_duration_seconds', 'histogram'],
      ['x402_settle_duration_seconds', 'histogram'],
      ['x402_verify_total', 'counter'],
      ['x402_settle_total', 'counter'],
      ['settlement_queue_depth', 'gauge'],
      ['settlements_pending', 'gauge'],
      ['settlement_gas_spent_wei_total', 'counter'],
      ['signer_balance_wei', 'gauge'],
    ]) {
      expect(text).toContain(`# TYPE ${name} ${type}`);
    }
  });

  it('classifies verify answers, maps v1 names to CAIP-2 and keeps unknown networks out of the labels', async () => {
    const { metrics, facilitator } = setup();
    await facilitator.measureVerify(body('base'), async () => ({ isValid: true, payer: '0x1' }));
    await facilitator.measureVerify(body('eip155:8453'), async () => ({ isValid: false, invalidReason: X402Reason.exactEvmSignature }));
    await facilitator.measureVerify(body('eip155:8453'), async () => ({ isValid: false, invalidReason: X402Reason.unexpectedVerifyError }));
    await facilitator.measureVerify(body('eip155:666'), async () => ({ isValid: false, invalidReason: X402Reason.invalidNetwork }));
    await facilitator.measureVerify(body({ not: 'a string' }), async () => ({ isValid: false, invalidReason: 'made_up_by_someone' }));
    await expect(facilitator.measureVerify(null, () => Promise.reject(new ProblemError('validation_failed', 'bad')))).rejects.toThrow('bad');
    await expect(facilitator.measureVerify(body('base'), () => Promise.reject(new Error('bug')))).rejects.toThrow('bug');
    const text = await metrics.scrape();
    const total = (labels: string) => value(text, METRIC_NAMES.verifyTotal, labels);
    expect(total('network="eip155:8453",outcome="valid",reason="none"')).toBe(1);
    expect(total('network="eip155:8453",outcome="invalid",reason="invalid_exact_evm_signature"')).toBe(1);
    expect(total('network="eip155:8453",outcome="error",reason="unexpected_verify_error"')).toBe(1);
    expect(total('network="unknown",outcome="invalid",reason="invalid_network"')).toBe(1);
    expect(total('network="unknown",outcome="invalid",reason="other"')).toBe(1);
    expect(total('network="unknown",outcome="invalid",reason="validation_failed"')).toBe(1);
    expect(total('network="eip155:8453",outcome="error",reason="internal_error"')).toBe(1);
    expect(value(text, `${METRIC_NAMES.verifyDuration}_count`, 'network="eip155:8453",outcome="error"')).toBe(2);
    expect(text).not.toContain('eip155:666');
    expect(text).not.toContain('made_up_by_someone');
  });

  it('classifies settle answers: success, invalid, pending, error', () => {
    expect(settleOutcome({ success: true, transaction: '0x1', network: 'base' })).toEqual(['success', 'none']);
    expect(settleOutcome({ success: false, errorReason: X402Reason.settlementPending, transaction: '0x1', network: 'base' })).toEqual([
      'pending',
      'settlement_pending',
    ]);
    expect(settleOutcome({ success: false, errorReason: X402Reason.unexpectedSettleError, transaction: '', network: 'base' })).toEqual([
      'error',
      'unexpected_settle_error',
    ]);
    expect(settleOutcome({ success: false, errorReason: X402Reason.exactEvmTransactionFailed, transaction: '0x1', network: 'base' })).toEqual([
      'invalid',
      'invalid_exact_evm_transaction_failed',
    ]);
    expect(verifyOutcome({ isValid: false })).toEqual(['invalid', 'other']);
    expect(reasonLabel(undefined)).toBe('other');
    expect(reasonLabel('payment_identifier_conflict')).toBe('payment_identifier_conflict');
  });

  it('records settle durations and counters, gas, pending settlements and signer balances', async () => {
    const { metrics, facilitator } = setup();
    await facilitator.measureSettle(body('base'), async () => ({ success: true, transaction: '0xabc', network: 'base' }));
    await expect(
      facilitator.measureSettle(body('base'), () => Promise.reject(new ProblemError('payment_identifier_conflict', 'reused'))),
    ).rejects.toBeInstanceOf(ProblemError);
    facilitator.recordGasUsed('eip155:8453', { gasUsed: 86_103n, effectiveGasPrice: 1_000_000_000n });
    facilitator.addGasSpent('base', 1n);
    facilitator.setSettlementsPending(3);
    facilitator.setSignerBalance('eip155:8453', '0xD72505BC4336aF491c8EadCF6F28b1EAD73d0514', 10n ** 17n);
    const text = await metrics.scrape();
    expect(value(text, METRIC_NAMES.settleTotal, 'network="eip155:8453",outcome="success",reason="none"')).toBe(1);
    expect(value(text, METRIC_NAMES.settleTotal, 'network="eip155:8453",outcome="invalid",reason="payment_identifier_conflict"')).toBe(1);
    expect(value(text, `${METRIC_NAMES.settleDuration}_count`, 'network="eip155:8453",outcome="success"')).toBe(1);
    expect(value(text, METRIC_NAMES.gasSpent, 'network="eip155:8453"')).toBe(86_103_000_000_001);
    expect(text).toContain(`\n${METRIC_NAMES.settlementsPending} 3\n`);
    expect(value(text, METRIC_NAMES.signerBalance, 'network="eip155:8453",signer="0xD72505BC4336aF491c8EadCF6F28b1EAD73d0514"')).toBe(1e17);
  });

  it('reads signer balances at scrape time, at most once per maxAgeMs, keeping old values when a read fails', async () => {
    const { metrics, facilitator } = setup();
    let reads = 0;
    let fail = false;
    facilitator.trackSignerBalances(
      [
        { network: 'eip155:8453', signer: '0xa', read: async () => BigInt(++reads) * 1000n },
        { network: 'eip155:8453', signer: '0xb', read: async () => (fail ? Promise.reject(new Error('rpc down')) : 5n) },
      ],
      { maxAgeMs: 60_000 },
    );
    let text = await metrics.scrape();
    expect(value(text, METRIC_NAMES.signerBalance, 'network="eip155:8453",signer="0xa"')).toBe(1000);
    text = await metrics.scrape();
    expect(reads).toBe(1);
    expect(value(text, METRIC_NAMES.signerBalance, 'network="eip155:8453",signer="0xa"')).toBe(1000);

    const { metrics: m2, facilitator: f2 } = setup();
    f2.trackSignerBalances([{ network: 'eip155:8453', signer: '0xb', read: async () => (fail ? Promise.reject(new Error('rpc down')) : 5n) }], { maxAgeMs: 0 });
    await m2.scrape();
    fail = true;
    text = await m2.scrape();
    expect(value(text, METRIC_NAMES.signerBalance, 'network="eip155:8453",signer="0xb"')).toBe(5);
    expect(value(text, METRIC_NAMES.collectErrors, 'collector="signer_balances"')).toBe(1);
  });
});
