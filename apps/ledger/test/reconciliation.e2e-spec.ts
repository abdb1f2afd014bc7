import { randomBytes, randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { MERCHANT_NOTICES_QUEUE } from '@mp/clients';
import { CHANNEL_BREAK_KINDS, PREPAID_BREAK_KINDS, type ReconRowJson } from '@mp/reconciliation';
import { stripeFee } from '@mp/stripe';
import { call } from '../../../test/support/http';
import { until } from '../../../test/support/webhook-receiver';
import { ReconciliationQueue, SCHEDULER_ID } from '../src/reconciliation/reconciliation.queue';
import { ReconciliationWorker } from '../src/reconciliation/reconciliation.worker';
import { lastCompletePeriod, scheduledRunId } from '../src/reconciliation/scheduled-runs';
import { startLedger, type RunningLedger } from '../../../test/support/ledger-app';
import { ReconMerchant, startReconWorld, type ReconWorld } from './support/recon-world';

/**
 * Reconciliation end to end over the real parts: payments settled by the facilitator on anvil and through Stripe
 * (the fake, read with the official SDK) booked by the ledger's ingestion, the rest booked through the ledger's API
 * with the merchant's own key, plain ERC-20 transfers on anvil, runs started over HTTP and done by the BullMQ worker,
 * and break notices delivered by the facilitator to the merchant's webhook endpoint, signed.
 */
/** The balance checks' kinds, none in these runs (no channels, no prepaid balances). */
const NO_BALANCE_BREAKS = Object.fromEntries([...CHANNEL_BREAK_KINDS, ...PREPAID_BREAK_KINDS].map((k) => [k, 0]));

describe('reconciliation against anvil and the fake Stripe', () => {
  const period = { from: new Date(Date.now() - 60_000), to: new Date(Date.now() + 10 * 60_000) };
  const notices = () => world.receiver.received.filter((w) => JSON.parse(w.body).type === 'reconciliation.breaks_found');

  let world: ReconWorld;
  let merchant: ReconMerchant;
  let other: ReconMerchant;

  beforeAll(async () => {
    // small block ranges: the scan crosses many of them
    world = await startReconWorld({ RECON_BLOCK_RANGE: '3' });
    merchant = await ReconMerchant.create(world, 'reconciliation e2e', world.receiver.url);
    // every delivery must verify with the merchant's secret (standardwebhooks, as a merchant checks it)
    world.receiver.verifyWith(merchant.merchant.webhookSecret);
    other = await ReconMerchant.create(world, 'reconciliation e2e, another merchant');
  });
  afterAll(async () => {
    await world?.close();
  });

  const reconcile = () => merchant.reconcile(period);
  let firstRun: any;
  const ids: Record<string, string> = {};
  const refs: Record<string, string> = {};

  it('reports each injected break exactly once with the right kind, with totals per asset and source', async () => {
    const { USDC, USD } = world;
    // A payment the facilitator settled (x402, EIP-3009), booked by ingestion: the ledger knows its transaction hash.
    await merchant.settle(1_000_000n, 4);
    // Booked exactly, and booked a second time by mistake.
    const booked = await merchant.transfer(2_500_000n, 3);
    refs.booked = booked.reference;
    ids.booked = await merchant.book({ asset: USDC, code: 'payment', reference: booked.reference, amount: 2_500_000n });
    ids.bookedAgain = await merchant.book({ asset: USDC, code: 'payment', reference: booked.reference, amount: 2_500_000n });
    // A transfer the ledger never saw.
    refs.unseen = (await merchant.transfer(700_000n, 3)).reference;
    // Booked with the wrong amount.
    const misbooked = await merchant.transfer(3_000_000n, 3);
    refs.misbooked = misbooked.reference;
    ids.misbooked = await merchant.book({ asset: USDC, code: 'payment', reference: misbooked.reference, amount: 3_100_000n });
    // A ledger entry with no transfer on chain.
    refs.phantom = `0x${randomBytes(32).toString('hex')}:0`;
    ids.phantom = await merchant.book({ asset: USDC, code: 'payment', reference: refs.phantom, amount: 4_200_000n });

    // Stripe: an MPP payment with Stripe's fee (both booked by ingestion), a refund the ledger lacks, another merchant's payment.
    const { paymentIntent } = await merchant.payWithStripe('1234');
    refs.refund = (await world.stripe.buyer.refunds.create({ payment_intent: paymentIntent, amount: 500 })).id;
    await other.payWithStripe('999');

    firstRun = await reconcile();
    expect(firstRun).toMatchObject({ status: 'completed', error: null, progress: { percent: 100 }, sources: ['chain', 'stripe'] });
    expect(firstRun.summary).toMatchObject({
      counts: { matched: 4, pending: 0, missing_in_ledger: 2, missing_externally: 1, amount_mismatch: 1, duplicate: 1, over_refund: 0 },
      breaks: 5,
      scope: { reconciled: ['chain/payment', 'chain/refund', 'stripe/payment', 'stripe/refund', 'stripe/fee'], leftOut: 0 },
    });

    const breaks = await merchant.breaksOf(firstRun.id);
    const found = breaks.map((b) => [b.kind, b.source, b.entryKind, b.reference, b.ledger?.id ?? null]);
    expect(found).toHaveLength(5);
    expect(found).toEqual(
      expect.arrayContaining([
        ['missing_in_ledger', 'chain', 'payment', refs.unseen, null],
        ['missing_in_ledger', 'stripe', 'refund', refs.refund, null],
        ['amount_mismatch', 'chain', 'payment', refs.misbooked, ids.misbooked],
        ['missing_externally', 'chain', 'payment', refs.phantom, ids.phantom],
        ['duplicate', 'chain', 'payment', refs.booked, ids.bookedAgain],
      ]),
    );
    expect(breaks.find((b) => b.kind === 'amount_mismatch')).toMatchObject({
      difference: '-100000',
      external: { amount: '3000000', details: { from: misbooked.from.toLowerCase() } },
    });

    const fee = BigInt(stripeFee(1234));
    expect(firstRun.totals).toEqual([
      {
        asset: USDC,
        source: 'chain',
        ledger: { count: 5, net: '13300000' },
        external: { count: 4, net: '7200000' },
        matched: { count: 2, net: '3500000' },
        pending: 0,
        breaks: { ...NO_BALANCE_BREAKS, missing_in_ledger: 1, missing_externally: 1, amount_mismatch: 1, duplicate: 1, over_refund: 0 },
        difference: '-6100000',
      },
      {
        asset: USD,
        source: 'stripe',
        ledger: { count: 2, net: String(1234n - fee) },
        external: { count: 3, net: String(1234n - fee - 500n) },
        matched: { count: 2, net: String(1234n - fee) },
        pending: 0,
        breaks: { ...NO_BALANCE_BREAKS, missing_in_ledger: 1, missing_externally: 0, amount_mismatch: 0, duplicate: 0, over_refund: 0 },
        difference: '-500',
      },
    ]);

    // the merchant is told by the facilitator's signed webhook (the receiver verifies it), naming every new break and the report
    const notice = await until('the breaks webhook', async () => notices()[0]);
    const data = JSON.parse(notice.body).data;
    expect(data).toMatchObject({ runId: firstRun.id, merchantId: merchant.merchantId, summary: { breaks: 5 }, newBreakCount: 5 });
    expect(data.newBreaks.map((b: ReconRowJson) => b.key).sort()).toEqual(breaks.map((b) => b.key).sort());
    expect(data.reportPath).toMatch(new RegExp(`^/reconciliations/${firstRun.id}/report\\?token=`));
    // the link in the webhook opens the report without a key
    expect((await fetch(`${world.ledger.url}${data.reportPath}`)).status).toBe(200);
  });

  /** Once the run has decided whom to tell (notified_at), its notice is queued or it never will be. */
  const noticeQueued = async (runId: string) => {
    await until(`run ${runId} notified`, async () => {
      const [row] = await world.ledger.db.$queryRawUnsafe<{ notifiedAt: Date | null }[]>(
        `SELECT notified_at AS "notifiedAt" FROM ledger.reconciliation_runs WHERE id = $1::uuid`,
        runId,
      );
      return row?.notifiedAt ?? undefined;
    });
    const redis = new Redis(world.facilitator.config.redisUrl, { maxRetriesPerRequest: null });
    const queue = new Queue(MERCHANT_NOTICES_QUEUE, { connection: redis, prefix: world.facilitator.config.queuePrefix });
    try {
      return (await queue.getJob(`notice-reconciliation-${runId}`)) !== undefined;
    } finally {
      await queue.close();
      redis.disconnect();
    }
  };

  it('finds the same breaks again without telling the merchant twice', async () => {
    expect(await noticeQueued(firstRun.id)).toBe(true);
    const again = await reconcile();
    expect(again.id).not.toBe(firstRun.id);
    expect(again.summary.breaks).toBe(5);
    expect((await merchant.breaksOf(again.id)).map((b) => b.key).sort()).toEqual((await merchant.breaksOf(firstRun.id)).map((b) => b.key).sort());
    expect(await noticeQueued(again.id)).toBe(false);
    expect(notices()).toHaveLength(1);
  });

  it('is clean once the breaks are resolved by new and correcting transfers, none edited', async () => {
    const { USDC, USD } = world;
    await merchant.book({ asset: USDC, code: 'payment', reference: refs.unseen, amount: 700_000n });
    await merchant.book({ asset: USD, code: 'refund', reference: refs.refund, amount: 500n });
    await merchant.book({ asset: USDC, code: 'correction', reference: ids.misbooked, amount: 100_000n, direction: 'out' });
    await merchant.book({ asset: USDC, code: 'correction', reference: ids.phantom, amount: 4_200_000n, direction: 'out' });
    await merchant.book({ asset: USDC, code: 'correction', reference: ids.bookedAgain, amount: 2_500_000n, direction: 'out' });

    const clean = await reconcile();
    expect(clean.summary).toMatchObject({ breaks: 0, corrections: 3, counts: { matched: 7 } });
    expect(clean.totals.map((t: any) => t.difference)).toEqual(['0', '0']);
    expect(await merchant.breaksOf(clean.id)).toEqual([]);
    // the first run's report is unchanged: its rows are written once
    expect(await merchant.breaksOf(firstRun.id)).toHaveLength(5);
  });

  it('lets a merchant read only its own runs, or one run by its signed link', async () => {
    const id = firstRun.id;
    const anonymous = (path: string) => call(`${world.ledger.url}${path}`);
    expect((await anonymous(`/reconciliations/${id}`)).status).toBe(401);
    expect((await other.api('GET', `/reconciliations/${id}`)).status).toBe(404);
    expect((await other.api('GET', `/reconciliations/${id}/rows`)).status).toBe(404);
    const token = new URL(firstRun.links.report, world.ledger.url).searchParams.get('token');
    expect((await anonymous(`/reconciliations/${id}/rows?kind=breaks&token=${token}`)).body.data).toHaveLength(5);
    expect((await anonymous(`/reconciliations/${randomUUID()}?token=${token}`)).status).toBe(401);
    expect((await merchant.api('GET', `/reconciliations/not-a-uuid`)).body).toMatchObject({ status: 400, invalidParams: [{ name: 'id' }] });
  });

  it("never extends a link by reading with it, and revokes a run's links, after which a new one works", async () => {
    const id = firstRun.id;
    const anonymous = (path: string) => call(`${world.ledger.url}${path}`);
    const link = firstRun.links.report as string;
    const token = new URL(link, world.ledger.url).searchParams.get('token')!;
    // reading with the link hands out that same link (same expiry), in JSON and in the page's own links
    expect((await anonymous(`/reconciliations/${id}?token=${token}`)).body.links.report).toBe(link);
    const page = await anonymous(link);
    expect(page.status).toBe(200);
    expect(page.body).toContain(`/reconciliations/${id}.csv?token=${token}`);

    expect((await other.api('POST', `/reconciliations/${id}/report-link/revoke`)).status).toBe(404);
    expect((await anonymous(`/reconciliations/${id}/report-link/revoke`)).status).toBe(404);
    expect((await call(`${world.ledger.url}/reconciliations/${id}/report-link/revoke`, { method: 'POST' })).status).toBe(401);
    const revoked = await merchant.api('POST', `/reconciliations/${id}/report-link/revoke`);
    expect(revoked.status).toBe(200);
    expect(revoked.body).toMatchObject({ id, status: 'completed' });

    for (const path of [
      link,
      `/reconciliations/${id}?token=${token}`,
      `/reconciliations/${id}.csv?token=${token}`,
      `/reconciliations/${id}/rows?token=${token}`,
    ]) {
      const refused = await anonymous(path);
      expect(refused.status, path).toBe(401);
      expect(refused.body.detail, path).toContain('expired, was revoked');
    }
    // the link the webhook carried was of the same generation: it is revoked too
    const noticed = JSON.parse(notices()[0].body).data.reportPath;
    expect((await anonymous(noticed)).status).toBe(401);

    const fresh = revoked.body.links.report as string;
    expect(fresh).not.toBe(link);
    expect((await anonymous(fresh)).status).toBe(200);
    // the merchant's key still reads the run, with a link of the new generation
    const owned = await merchant.api('GET', `/reconciliations/${id}`);
    expect((await anonymous(owned.body.links.report)).status).toBe(200);
  });

  it('pages through rows in report order', async () => {
    const first = await merchant.api('GET', `/reconciliations/${firstRun.id}/rows?limit=3`);
    expect(first.body.data).toHaveLength(3);
    const second = await merchant.api('GET', `/reconciliations/${firstRun.id}/rows?limit=100&cursor=${first.body.nextCursor}`);
    expect(second.body.nextCursor).toBeNull();
    expect(first.body.data.length + second.body.data.length).toBe(firstRun.summary.rows);
    expect((await merchant.api('GET', `/reconciliations/${firstRun.id}/rows?kind=nope`)).body.invalidParams[0].name).toBe('kind');
  });

  it("lists the merchant's runs newest first, a page at a time, and never another merchant's", async () => {
    const othersRun = await other.reconcile(period);
    expect(othersRun.status).toBe('completed');
    const ownIds = (
      await world.ledger.db.$queryRawUnsafe<{ id: string }[]>(
        `SELECT id::text AS id FROM ledger.reconciliation_runs WHERE merchant_id = $1::uuid ORDER BY created_at DESC, id DESC`,
        merchant.merchantId,
      )
    ).map((r) => r.id);
    expect(ownIds.length).toBeGreaterThanOrEqual(3);

    const listed: any[] = [];
    let cursor: string | null = null;
    do {
      const page: any = await merchant.api('GET', `/reconciliations?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.status).toBe(200);
      expect(page.headers.get('cache-control')).toBe('no-store');
      expect(page.body.data.length).toBeLessThanOrEqual(2);
      listed.push(...page.body.data);
      cursor = page.body.nextCursor;
    } while (cursor);
    expect(listed.map((r) => r.id)).toEqual(ownIds);
    expect(listed.at(-1)).toMatchObject({ id: firstRun.id, merchantId: merchant.merchantId, status: 'completed', summary: { breaks: 5 } });
    expect(listed.every((r) => r.merchantId === merchant.merchantId)).toBe(true);
    // each run as GET /reconciliations/{id} shows it, with a report link that opens
    expect((await call(`${world.ledger.url}${listed[0].links.report}`)).status).toBe(200);

    // the other merchant sees its own run only, and this merchant's never
    const others = await other.api('GET', '/reconciliations');
    expect(others.body).toEqual({ data: [expect.objectContaining({ id: othersRun.id, merchantId: other.merchantId })], nextCursor: null });
    expect(JSON.stringify(others.body)).not.toContain(merchant.merchantId);

    expect((await call(`${world.ledger.url}/reconciliations`)).status).toBe(401);
    for (const [query, name] of [
      ['limit=0', 'limit'],
      ['limit=101', 'limit'],
      ['cursor=nope', 'cursor'],
      ['status=done', 'status'],
    ] as const) {
      const refused = await merchant.api('GET', `/reconciliations?${query}`);
      expect(refused.status, query).toBe(400);
      expect(
        refused.body.invalidParams.map((p: { name: string }) => p.name),
        query,
      ).toContain(name);
    }
  });

  it('refuses a malformed request with a 400 naming the field, and creates nothing', async () => {
    const post = (body: unknown) => merchant.api('POST', '/reconciliations', body);
    const cases: [unknown, string][] = [
      [{ from: '2026-11-30', to: '2026-12-01T00:00:00Z' }, 'from'],
      [{ from: '2026-12-01T00:00:00Z', to: '2026-11-30T00:00:00Z' }, 'to'],
      [{ from: '2026-01-01T00:00:00Z', to: '2026-12-01T00:00:00Z' }, 'to'],
      [{ from: '2026-11-30T00:00:00Z', to: '2026-12-01T00:00:00Z', merchant: 'x' }, 'merchant'],
      [{ merchantId: other.merchantId, from: '2026-11-30T00:00:00Z', to: '2026-12-01T00:00:00Z' }, 'merchantId'],
      [{ from: '2026-11-30T00:00:00Z', to: '2026-12-01T00:00:00Z', sources: [] }, 'sources'],
      [{ from: '2026-11-30T00:00:00Z', to: '2026-12-01T00:00:00Z', sources: ['chain', 'chain'] }, 'sources'],
      [{ from: '2026-11-30T00:00:00Z', to: '2026-12-01T00:00:00Z', sources: ['bank'] }, 'sources'],
    ];
    const count = async () =>
      (
        await world.ledger.db.$queryRawUnsafe<{ n: number }[]>(
          `SELECT count(*)::int AS n FROM ledger.reconciliation_runs WHERE merchant_id = $1::uuid`,
          merchant.merchantId,
        )
      )[0].n;
    const before = await count();
    for (const [body, field] of cases) {
      const response = await post(body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.body.invalidParams.map((p: { name: string }) => p.name)).toContain(field);
    }
    expect(
      (await call(`${world.ledger.url}/reconciliations`, { key: 'mpk_unknown', body: { from: '2026-11-30T00:00:00Z', to: '2026-12-01T00:00:00Z' } })).status,
    ).toBe(401);
    expect(await count()).toBe(before);
  });

  describe('one run at a time per merchant', () => {
    // A second ledger on a queue prefix no worker serves: its runs stay queued, so "in flight" lasts as long as the test needs.
    let idle: RunningLedger;
    const prefix = `mp:recon-idle-${randomBytes(4).toString('hex')}`;
    const days = (n: number) => ({ from: new Date(Date.UTC(2026, 10, n)).toISOString(), to: new Date(Date.UTC(2026, 10, n + 1)).toISOString() });
    const start = (body: object) => call(`${idle.url}/reconciliations`, { key: other.apiKey, body });

    beforeAll(async () => {
      idle = await startLedger({
        FACILITATOR_URL: world.facilitator.url,
        RECON_WORKER: 'false',
        QUEUE_PREFIX: prefix,
        STRIPE_SECRET_KEY: 'sk_test_ledger_reader',
        STRIPE_API_BASE: world.stripe.fake.url,
      });
    });
    afterAll(async () => {
      // the prefix is this test's alone: leave nothing of it in Redis
      await idle?.app.get(ReconciliationQueue).queue.obliterate({ force: true });
      await idle?.close();
    });

    let inFlight: any;

    it('answers the same request with the run in flight, and another with a 409 naming it; PostgreSQL holds it under concurrency', async () => {
      // five different periods at once: exactly one run is created, the others are told which one is in flight
      const answers = await Promise.all([1, 2, 3, 4, 5].map((day) => start(days(day))));
      const accepted = answers.filter((a) => a.status === 202);
      expect(accepted).toHaveLength(1);
      inFlight = accepted[0].body;
      expect(inFlight).toMatchObject({ status: 'queued', sources: ['chain', 'stripe'] });
      for (const refused of answers.filter((a) => a.status !== 202)) {
        expect(refused.status).toBe(409);
        expect(refused.body).toMatchObject({ code: 'reconciliation_in_progress', runId: inFlight.id, location: `/reconciliations/${inFlight.id}` });
        expect(refused.body.detail).toContain(inFlight.id);
      }

      // the same merchant, period and sources: the run in flight, not a new one
      const same = await start({ ...inFlight.period, sources: ['stripe', 'chain'] });
      expect(same.status).toBe(202);
      expect(same.body.id).toBe(inFlight.id);
      expect(same.headers.get('location')).toBe(`/reconciliations/${inFlight.id}`);
      // the same period against other sources is another request
      const chainOnly = await start({ ...inFlight.period, sources: ['chain'] });
      expect(chainOnly).toMatchObject({ status: 409, body: { runId: inFlight.id } });

      const [{ n }] = await world.ledger.db.$queryRawUnsafe<{ n: number }[]>(
        `SELECT count(*)::int AS n FROM ledger.reconciliation_runs WHERE merchant_id = $1::uuid AND status IN ('queued', 'running')`,
        other.merchantId,
      );
      expect(n).toBe(1);
      // the database itself refuses a second run in flight, whoever asks
      await expect(
        world.ledger.db.$executeRawUnsafe(
          `INSERT INTO ledger.reconciliation_runs (id, merchant_id, period_from, period_to, sources, trigger, status) VALUES ($1::uuid, $2::uuid, now(), now() + interval '1 hour', '{chain}', 'api', 'queued')`,
          randomUUID(),
          other.merchantId,
        ),
      ).rejects.toThrow(/reconciliation_runs_one_in_flight_key|unique/i);
    });

    it('puts a scheduled run off while the merchant has a run in flight', async () => {
      const worker = idle.app.get(ReconciliationWorker);
      const period = lastCompletePeriod(new Date(), 'day');
      expect(await worker.scheduleOne(other.merchantId, period, 0)).toBe('deferred');
      const deferred = await idle.app.get(ReconciliationQueue).queue.getJob(`deferred-${scheduledRunId(other.merchantId, period)}-1`);
      expect(await deferred?.getState()).toBe('delayed');
      expect(deferred?.data).toMatchObject({ merchantId: other.merchantId, from: period.from.toISOString(), deferrals: 1 });
      await deferred!.remove();
    });

    it('runs the queued run once a worker serves it; then a new request starts a new run', async () => {
      await idle.close();
      idle = await startLedger({
        FACILITATOR_URL: world.facilitator.url,
        QUEUE_PREFIX: prefix,
        STRIPE_SECRET_KEY: 'sk_test_ledger_reader',
        STRIPE_API_BASE: world.stripe.fake.url,
      });
      const done = await until(
        'the queued run done',
        async () => {
          const run = await call(`${idle.url}/reconciliations/${inFlight.id}`, { key: other.apiKey });
          return run.body.status === 'completed' ? run.body : undefined;
        },
        60_000,
      );
      expect(done.summary.breaks).toBe(0);
      const next = await start({ ...days(9), sources: ['chain'] });
      expect(next.status).toBe(202);
      expect(next.body.id).not.toBe(inFlight.id);
      expect(next.body.sources).toEqual(['chain']);
      await until(
        'the new run done',
        async () => ((await call(`${idle.url}/reconciliations/${next.body.id}`, { key: other.apiKey })).body.status === 'completed' ? true : undefined),
        60_000,
      );
    });
  });

  it('runs on schedule: one run per merchant for the last complete day, however often the scheduler fires', async () => {
    const worker = world.ledger.app.get(ReconciliationWorker);
    const now = new Date();
    const expected = scheduledRunId(merchant.merchantId, lastCompletePeriod(now, 'day'));
    expect(await worker.schedule(now)).toContain(expected);
    expect(await worker.schedule(now)).not.toContain(expected);
    const run = await merchant.finished(expected);
    expect(run).toMatchObject({
      trigger: 'schedule',
      status: 'completed',
      sources: ['chain', 'stripe'],
      period: { from: lastCompletePeriod(now, 'day').from.toISOString() },
    });
    // yesterday: nothing happened then on this fresh chain
    expect(run.summary.rows).toBe(0);
  });

  it('fires the BullMQ job scheduler of RECON_SCHEDULE', async () => {
    // a merchant no run has seen yet, so only a tick of the scheduler can create its run
    const newcomer = await ReconMerchant.create(world, 'reconciliation e2e, newcomer');
    await newcomer.settle(10_000n, 4);
    // another replica, configured as the first (either may take the scheduler's ticks and the runs they make)
    const scheduled = await startLedger({
      FACILITATOR_URL: world.facilitator.url,
      QUEUE_PREFIX: world.facilitator.config.queuePrefix,
      STRIPE_SECRET_KEY: 'sk_test_ledger_reader',
      STRIPE_API_BASE: world.stripe.fake.url,
      RECON_SCHEDULE: '* * * * * *',
    });
    try {
      const run = await newcomer.finished(scheduledRunId(newcomer.merchantId, lastCompletePeriod(new Date(), 'day')));
      expect(run, run.error).toMatchObject({ trigger: 'schedule', status: 'completed', merchantId: newcomer.merchantId });
    } finally {
      await scheduled.app.get(ReconciliationQueue).queue.removeJobScheduler(SCHEDULER_ID);
      await scheduled.close();
    }
  });
});
