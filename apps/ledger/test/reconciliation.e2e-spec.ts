import { randomBytes, randomUUID } from 'node:crypto';
import Stripe from 'stripe';
import { PrismaService } from '@mp/db';
import { createWalletClient, defineChain, erc20Abi, http, type Address, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { chainAsset, stripeAsset, type LedgerEntry, type ReconRowJson } from '@mp/reconciliation';
import { startFakeStripe, stripeClientOptions, stripeFee, type FakeStripe } from '@mp/stripe';
import { payerAccount, signAuthorization, testChain, v2Body, v2Requirements } from '../../../test/support/chain';
import { postJson, startFacilitator, TEST_DATABASE_URL, type RunningFacilitator } from '../../../test/support/facilitator';
import { ReconciliationQueue, SCHEDULER_ID } from '../src/reconciliation/reconciliation.queue';
import { ReconciliationWorker } from '../src/reconciliation/reconciliation.worker';
import { RunRepository } from '../src/reconciliation/run.repository';
import { lastCompletePeriod, scheduledRunId } from '../src/reconciliation/scheduled-runs';
import { PgLedgerSource } from '../src/reconciliation/testing/pg-ledger-source';
import { RecordingNotifier, startReconciliationApp, type RunningReconciliation } from '../src/reconciliation/testing/test-app';

/**
 * Reconciliation end to end: real transfers on anvil (a facilitator settlement and plain ERC-20 transfers), real
 * PaymentIntents and refunds on the fake Stripe read through the official SDK, ledger entries in PostgreSQL, and
 * runs started over HTTP and done by the BullMQ worker.
 */
describe('reconciliation against anvil and the fake Stripe', () => {
  const { manifest, client } = testChain();
  const usdc = manifest.tokens.usdc;
  const USDC = chainAsset(manifest.network, usdc.address);
  const USD = stripeAsset('usd');
  const chain = defineChain({ id: manifest.chainId, name: 'anvil', nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 }, rpcUrls: { default: { http: [manifest.rpcUrl] } } });
  const payer = createWalletClient({ account: payerAccount(manifest, 3), chain, transport: http(manifest.rpcUrl) });

  const merchantId = randomUUID();
  const otherMerchantId = randomUUID();
  const apiKey = `mpk_${randomBytes(12).toString('hex')}`;
  const otherKey = `mpk_${randomBytes(12).toString('hex')}`;
  const merchantAddress = privateKeyToAccount(generatePrivateKey()).address;
  const period = { from: new Date(Date.now() - 60_000), to: new Date(Date.now() + 10 * 60_000) };

  let fakeStripe: FakeStripe;
  let stripe: Stripe;
  let source: PgLedgerSource;
  let recon: RunningReconciliation;
  let facilitator: RunningFacilitator;
  const notifier = new RecordingNotifier();

  beforeAll(async () => {
    fakeStripe = await startFakeStripe({ port: 0 });
    stripe = new Stripe('sk_test_merchant_platform', stripeClientOptions(fakeStripe));
    source = new PgLedgerSource(TEST_DATABASE_URL);
    await source.install();
    await source.addAddress(merchantId, { network: manifest.network, address: merchantAddress });
    await source.accept(merchantId, { asset: USDC, symbol: 'USDC', decimals: 6 });
    const env = {
      ...process.env,
      DATABASE_URL: TEST_DATABASE_URL,
      RECON_SCHEDULE: 'off',
      RECON_PENDING_WINDOW_MS: '0',
      // small ranges: the scan crosses many of them
      RECON_BLOCK_RANGE: '3',
      STRIPE_SECRET_KEY: 'sk_test_ledger_reader',
      STRIPE_API_BASE: fakeStripe.url,
    };
    recon = await startReconciliationApp({ env, source, keys: new Map([[apiKey, merchantId], [otherKey, otherMerchantId]]), notifier });
    facilitator = await startFacilitator();
  });

  afterAll(async () => {
    await recon?.close();
    await facilitator?.close();
    await source?.close();
    await fakeStripe?.stop();
  });

  const api = async (method: 'GET' | 'POST', path: string, options: { key?: string; body?: unknown } = {}) => {
    const response = await fetch(`${recon.url}${path}`, {
      method,
      headers: { ...(options.key && { authorization: `Bearer ${options.key}` }), ...(options.body !== undefined && { 'content-type': 'application/json' }) },
      ...(options.body !== undefined && { body: JSON.stringify(options.body) }),
    });
    return { status: response.status, body: (await response.json()) as any };
  };

  /** Starts a run of the period over HTTP and waits for the worker to finish it. */
  const reconcile = async () => {
    const started = await api('POST', '/reconciliations', { key: apiKey, body: { merchantId, from: period.from.toISOString(), to: period.to.toISOString() } });
    expect(started.status).toBe(202);
    return waitForRun(started.body.id);
  };
  const waitForRun = async (id: string) => {
    for (const deadline = Date.now() + 30_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 100))) {
      const run = await api('GET', `/reconciliations/${id}`, { key: apiKey });
      if (run.body.status === 'completed' || run.body.status === 'failed') return run.body;
    }
    throw new Error(`run ${id} did not finish`);
  };
  const breaksOf = async (id: string): Promise<ReconRowJson[]> => (await api('GET', `/reconciliations/${id}/rows?kind=breaks`, { key: apiKey })).body.data;

  /** A plain ERC-20 transfer from a payer to the merchant: the reference of its Transfer log. */
  const transfer = async (amount: bigint): Promise<{ reference: string; hash: Hex }> => {
    const hash = await payer.writeContract({ address: usdc.address as Address, abi: erc20Abi, functionName: 'transfer', args: [merchantAddress, amount] });
    const receipt = await client.waitForTransactionReceipt({ hash });
    const log = receipt.logs.find((l) => l.address.toLowerCase() === usdc.address.toLowerCase())!;
    return { reference: `${hash}:${log.logIndex}`, hash };
  };
  const book = (id: string, fields: Partial<LedgerEntry> & Pick<LedgerEntry, 'reference' | 'amount'>) =>
    source.book({ id, merchantId, source: 'chain', asset: USDC, kind: 'payment', state: 'posted', occurredAt: new Date(), ...fields });

  let firstRun: any;
  const refs: Record<string, string> = {};

  it('reports each injected break exactly once with the right kind, with totals per asset and source', async () => {
    // A payment the facilitator settled (x402, EIP-3009): the ledger knows only its transaction hash.
    const payload = await signAuthorization(payerAccount(manifest, 4), usdc, manifest.chainId, { to: merchantAddress, value: 1_000_000n });
    const settled = await postJson(`${facilitator.url}/settle`, v2Body(payload, v2Requirements(manifest, usdc, 1_000_000n, { payTo: merchantAddress })));
    expect(settled.body).toMatchObject({ success: true });
    await book('settled', { reference: settled.body.transaction, amount: 1_000_000n });
    // Booked exactly, and booked a second time by mistake.
    const booked = await transfer(2_500_000n);
    await book('booked', { reference: booked.reference, amount: 2_500_000n });
    await book('booked-again', { reference: booked.reference, amount: 2_500_000n, occurredAt: new Date(Date.now() + 1) });
    // A transfer the ledger never saw.
    const unseen = await transfer(700_000n);
    refs.unseen = unseen.reference;
    // Booked with the wrong amount.
    const misbooked = await transfer(3_000_000n);
    refs.misbooked = misbooked.reference;
    await book('misbooked', { reference: misbooked.reference, amount: 3_100_000n });
    // A ledger entry with no transfer on chain.
    refs.phantom = `0x${randomBytes(32).toString('hex')}:0`;
    await book('phantom', { reference: refs.phantom, amount: 4_200_000n });

    // Stripe: a payment booked by its MPP challenge id, with Stripe's fee; a refund the ledger lacks; another merchant's payment.
    const intent = await stripe.paymentIntents.create({ amount: 1234, currency: 'usd', confirm: true, payment_method: 'pm_card_visa', metadata: { merchant_id: merchantId, challenge_id: 'chal_recon_1' } });
    await book('card', { source: 'stripe', asset: USD, reference: 'chal_recon_1', amount: 1234n });
    await book('card-fee', { source: 'stripe', asset: USD, kind: 'fee', reference: intent.id, amount: BigInt(stripeFee(1234)) });
    const refund = await stripe.refunds.create({ payment_intent: intent.id, amount: 500 });
    refs.refund = refund.id;
    await stripe.paymentIntents.create({ amount: 999, currency: 'usd', confirm: true, payment_method: 'pm_card_visa', metadata: { merchant_id: otherMerchantId, challenge_id: 'chal_other' } });

    firstRun = await reconcile();
    expect(firstRun).toMatchObject({ status: 'completed', error: null, progress: { percent: 100 } });
    expect(firstRun.summary).toMatchObject({
      counts: { matched: 4, pending: 0, missing_in_ledger: 2, missing_externally: 1, amount_mismatch: 1, duplicate: 1 },
      breaks: 5,
      scope: { reconciled: ['chain/payment', 'stripe/payment', 'stripe/refund', 'stripe/fee'], leftOut: 0 },
    });

    const breaks = await breaksOf(firstRun.id);
    const found = breaks.map((b) => [b.kind, b.source, b.entryKind, b.reference, b.ledger?.id ?? null]);
    expect(found).toHaveLength(5);
    expect(found).toEqual(
      expect.arrayContaining([
        ['missing_in_ledger', 'chain', 'payment', refs.unseen, null],
        ['missing_in_ledger', 'stripe', 'refund', refs.refund, null],
        ['amount_mismatch', 'chain', 'payment', refs.misbooked, 'misbooked'],
        ['missing_externally', 'chain', 'payment', refs.phantom, 'phantom'],
        ['duplicate', 'chain', 'payment', booked.reference, 'booked-again'],
      ]),
    );
    expect(breaks.find((b) => b.kind === 'amount_mismatch')).toMatchObject({ difference: '-100000', external: { amount: '3000000', details: { from: payer.account.address.toLowerCase() } } });

    const fee = BigInt(stripeFee(1234));
    expect(firstRun.totals).toEqual([
      {
        asset: USDC,
        source: 'chain',
        ledger: { count: 5, net: '13300000' },
        external: { count: 4, net: '7200000' },
        matched: { count: 2, net: '3500000' },
        pending: 0,
        breaks: { missing_in_ledger: 1, missing_externally: 1, amount_mismatch: 1, duplicate: 1 },
        difference: '-6100000',
      },
      {
        asset: USD,
        source: 'stripe',
        ledger: { count: 2, net: String(1234n - fee) },
        external: { count: 3, net: String(1234n - fee - 500n) },
        matched: { count: 2, net: String(1234n - fee) },
        pending: 0,
        breaks: { missing_in_ledger: 1, missing_externally: 0, amount_mismatch: 0, duplicate: 0 },
        difference: '-500',
      },
    ]);

    expect(notifier.notices).toHaveLength(1);
    expect(notifier.notices[0]).toMatchObject({ type: 'reconciliation.breaks_found', runId: firstRun.id, merchantId, summary: { breaks: 5 } });
    expect(notifier.notices[0].newBreaks.map((b) => b.key).sort()).toEqual(breaks.map((b) => b.key).sort());
    expect(notifier.notices[0].reportPath).toMatch(new RegExp(`^/reconciliations/${firstRun.id}/report\\?token=`));
  });

  it('finds the same breaks again without telling the merchant twice', async () => {
    const again = await reconcile();
    expect(again.summary.breaks).toBe(5);
    expect((await breaksOf(again.id)).map((b) => b.key).sort()).toEqual((await breaksOf(firstRun.id)).map((b) => b.key).sort());
    expect(notifier.notices).toHaveLength(1);
  });

  it('is clean once the breaks are resolved by new and correcting transfers, none edited', async () => {
    await book('unseen', { reference: refs.unseen, amount: 700_000n });
    await book('refund', { source: 'stripe', asset: USD, kind: 'refund', reference: refs.refund, amount: 500n });
    await book('misbooked-fix', { reference: 'correction', amount: -100_000n, corrects: 'misbooked' });
    await book('phantom-reversal', { reference: 'correction', amount: -4_200_000n, corrects: 'phantom' });
    await book('booked-again-reversal', { reference: 'correction', amount: -2_500_000n, corrects: 'booked-again' });

    const clean = await reconcile();
    expect(clean.summary).toMatchObject({ breaks: 0, corrections: 3, counts: { matched: 7 } });
    expect(clean.totals.map((t: any) => t.difference)).toEqual(['0', '0']);
    expect(await breaksOf(clean.id)).toEqual([]);
    // the first run's report is unchanged: its rows are written once
    expect(await breaksOf(firstRun.id)).toHaveLength(5);
    expect(notifier.notices).toHaveLength(1);
  });

  it('lets a merchant read only its own runs, or one run by its signed link', async () => {
    const id = firstRun.id;
    expect((await api('GET', `/reconciliations/${id}`)).status).toBe(401);
    expect((await api('GET', `/reconciliations/${id}`, { key: otherKey })).status).toBe(404);
    expect((await api('GET', `/reconciliations/${id}/rows`, { key: otherKey })).status).toBe(404);
    const token = new URL(firstRun.links.report, recon.url).searchParams.get('token');
    expect((await api('GET', `/reconciliations/${id}/rows?kind=breaks&token=${token}`)).body.data).toHaveLength(5);
    expect((await api('GET', `/reconciliations/${randomUUID()}?token=${token}`)).status).toBe(401);
    expect((await api('GET', `/reconciliations/not-a-uuid`, { key: apiKey })).body).toMatchObject({ status: 400, invalidParams: [{ name: 'id' }] });
  });

  it('pages through rows in report order', async () => {
    const first = await api('GET', `/reconciliations/${firstRun.id}/rows?limit=3`, { key: apiKey });
    expect(first.body.data).toHaveLength(3);
    const second = await api('GET', `/reconciliations/${firstRun.id}/rows?limit=100&cursor=${first.body.nextCursor}`, { key: apiKey });
    expect(second.body.nextCursor).toBeNull();
    expect(first.body.data.length + second.body.data.length).toBe(firstRun.summary.rows);
    expect((await api('GET', `/reconciliations/${firstRun.id}/rows?kind=nope`, { key: apiKey })).body.invalidParams[0].name).toBe('kind');
  });

  it('refuses a malformed request with a 400 naming the field, and creates nothing', async () => {
    const post = (body: unknown, key = apiKey) => api('POST', '/reconciliations', { key, body });
    const cases: [unknown, string][] = [
      [{ from: '2026-11-30', to: '2026-12-01T00:00:00Z' }, 'from'],
      [{ from: '2026-12-01T00:00:00Z', to: '2026-11-30T00:00:00Z' }, 'to'],
      [{ from: '2026-01-01T00:00:00Z', to: '2026-12-01T00:00:00Z' }, 'to'],
      [{ from: '2026-11-30T00:00:00Z', to: '2026-12-01T00:00:00Z', merchant: 'x' }, 'merchant'],
      [{ merchantId: otherMerchantId, from: '2026-11-30T00:00:00Z', to: '2026-12-01T00:00:00Z' }, 'merchantId'],
    ];
    const count = async () => (await recon.app.get(PrismaService).$queryRawUnsafe<{ n: number }[]>(`SELECT count(*)::int AS n FROM ledger.reconciliation_runs WHERE merchant_id = $1::uuid`, merchantId))[0].n;
    const before = await count();
    for (const [body, field] of cases) {
      const response = await post(body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.body.invalidParams.map((p: { name: string }) => p.name)).toContain(field);
    }
    expect((await post({ from: '2026-11-30T00:00:00Z', to: '2026-12-01T00:00:00Z' }, 'mpk_unknown')).status).toBe(401);
    expect(await count()).toBe(before);
  });

  it('runs on schedule: one run per merchant for the last complete day, however often the scheduler fires', async () => {
    const worker = recon.app.get(ReconciliationWorker);
    const now = new Date();
    const expected = scheduledRunId(merchantId, lastCompletePeriod(now, 'day'));
    expect(await worker.schedule(now)).toEqual([expected]);
    expect(await worker.schedule(now)).toEqual([]);
    const run = await waitForRun(expected);
    expect(run).toMatchObject({ trigger: 'schedule', status: 'completed', period: { from: lastCompletePeriod(now, 'day').from.toISOString() } });
    // yesterday: nothing happened then on this fresh chain
    expect(run.summary.rows).toBe(0);
  });

  it('fires the BullMQ job scheduler of RECON_SCHEDULE', async () => {
    // a merchant no run has seen yet, so only a tick of the scheduler can create its run
    const newcomer = randomUUID();
    await source.addAddress(newcomer, { network: manifest.network, address: privateKeyToAccount(generatePrivateKey()).address });
    const scheduled = await startReconciliationApp({ env: { ...process.env, DATABASE_URL: TEST_DATABASE_URL, RECON_SCHEDULE: '* * * * * *' }, source, keys: new Map() });
    try {
      const expected = scheduledRunId(newcomer, lastCompletePeriod(new Date(), 'day'));
      const runs = recon.app.get(RunRepository);
      let run;
      for (const deadline = Date.now() + 15_000; Date.now() < deadline && run?.status !== 'completed'; await new Promise((r) => setTimeout(r, 100))) run = await runs.findForWork(expected);
      expect(run).toMatchObject({ trigger: 'schedule', status: 'completed', merchantId: newcomer });
    } finally {
      await scheduled.app.get(ReconciliationQueue).queue.removeJobScheduler(SCHEDULER_ID);
      await scheduled.close();
    }
  });
});
