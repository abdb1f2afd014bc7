import { randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { Mppx } from 'mppx/client';
import { createWalletClient, defineChain, erc20Abi, http, type Address, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { PAYMENT_EVENTS_QUEUE, verifyWebhookSignature, type PaymentEventMessage } from '@mp/clients';
import { AccountCode, chartAccountId, nativeAsset, paymentTransferId, TransferCode } from '@mp/ledger';
import { chainAsset, stripeAsset, type ReconRowJson } from '@mp/reconciliation';
import { payerAccount, signAuthorization, testChain, v2Body, v2Requirements } from '../../../test/support/chain';
import { startFacilitator, type RunningFacilitator } from '../../../test/support/facilitator';
import { paymentRequiredResponse } from '../../../test/support/mpp';
import { startTestStripe, type TestStripe } from '../../../test/support/stripe';
import { PaymentIngestion } from '../src/ingestion/payment-ingestion.service';
import { startWebhookReceiver, until, type WebhookReceiver } from '../../../test/support/webhook-receiver';
import { createMerchant, setWebhook, type TestMerchant } from '../../../test/support/merchants';
import { call } from '../../../test/support/http';
import { startLedger, type RunningLedger } from '../../../test/support/ledger-app';

/**
 * Settlement ingestion and reconciliation over the real pipeline: payments settled by the facilitator on anvil reach
 * the ledger through the outbox and BullMQ, are booked as double-entry transfers (and their gas as an expense), and a
 * reconciliation run over them is all matched; then each kind of chain break is injected and reported once.
 */
describe('payments from the facilitator in the ledger, reconciled', () => {
  const { manifest, client } = testChain();
  const usdc = manifest.tokens.usdc;
  const USDC = chainAsset(manifest.network, usdc.address);
  const GAS = nativeAsset(manifest.network);
  const USD = stripeAsset('usd');
  const chain = defineChain({
    id: manifest.chainId,
    name: 'anvil',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [manifest.rpcUrl] } },
  });
  // a receiving address of its own: no other test pays it, so the chain side holds only this test's transfers
  const payTo = privateKeyToAccount(generatePrivateKey()).address;
  const period = { from: new Date(Date.now() - 60_000), to: new Date(Date.now() + 10 * 60_000) };

  let stripe: TestStripe;
  let facilitator: RunningFacilitator;
  let ledger: RunningLedger;
  let merchant: TestMerchant;
  const paymentIds: string[] = [];
  // the merchant's webhook endpoint: break notices arrive here, signed by the facilitator
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    receiver = await startWebhookReceiver();
    merchant = createMerchant('ingestion e2e', undefined, { receivingAddresses: [`${manifest.network}:${payTo}`] });
    setWebhook(merchant.merchantId, receiver.url);
    receiver.verifyWith(merchant.webhookSecret);
    stripe = await startTestStripe();
    // its own queues: the ledger's metrics below count this spec's jobs, not those other specs left in the shared prefix
    facilitator = await startFacilitator({ ...stripe.facilitatorEnv, OUTBOX_POLL_MS: '20', WEBHOOK_POLL_MS: '50', QUEUE_PREFIX: 'mp:test-ingestion' });
    ledger = await startLedger({
      STRIPE_SECRET_KEY: 'sk_test_ledger_reader',
      STRIPE_API_BASE: stripe.fake.url,
      LEDGER_INGEST: 'true',
      FACILITATOR_URL: facilitator.url,
      RECON_CHAIN_RPC_URLS: `${manifest.network}=${manifest.rpcUrl}`,
      RECON_PENDING_WINDOW_MS: '0',
      QUEUE_PREFIX: facilitator.config.queuePrefix,
    });
  });
  afterAll(async () => {
    await ledger?.close();
    await facilitator?.close();
    await stripe?.fake.stop();
    receiver?.close();
  });

  const settle = async (amount: bigint, payerIndex: number): Promise<{ paymentId: string; txHash: Hex }> => {
    const payload = await signAuthorization(payerAccount(manifest, payerIndex), usdc, manifest.chainId, { to: payTo, value: amount });
    const answer = await call(`${facilitator.url}/settle`, {
      method: 'POST',
      key: merchant.apiKey,
      body: v2Body(payload, v2Requirements(manifest, usdc, amount, { payTo })),
    });
    expect(answer.body.success, JSON.stringify(answer.body)).toBe(true);
    const [{ id }] = await ledger.db.$queryRawUnsafe<{ id: string }[]>(
      `SELECT id::text FROM facilitator.payments WHERE tx_hash = $1 AND amount = $2`,
      answer.body.transaction,
      amount.toString(),
    );
    paymentIds.push(id);
    return { paymentId: id, txHash: answer.body.transaction };
  };
  /** An MPP payment through Stripe: a challenge for the merchant, a Shared Payment Token from the official mppx client. */
  const payWithStripe = async (amount: string): Promise<{ paymentIntent: string }> => {
    const terms = {
      realm: 'shop.example',
      offers: [
        {
          method: 'stripe',
          intent: 'charge',
          request: { amount, currency: 'usd', methodDetails: { networkId: 'profile_test_merchant', paymentMethodTypes: ['card'] } },
        },
      ],
    };
    const issued = await call(`${facilitator.url}/mpp/challenges`, { method: 'POST', key: merchant.apiKey, body: terms });
    const credential = await Mppx.create({ methods: [stripe.mppxMethod()], polyfill: false }).createCredential(
      paymentRequiredResponse(issued.body.wwwAuthenticate),
    );
    const settled = await call(`${facilitator.url}/mpp/settle`, { method: 'POST', key: merchant.apiKey, body: { credential, terms } });
    expect(settled.status, JSON.stringify(settled.body)).toBe(200);
    const [{ id }] = await ledger.db.$queryRawUnsafe<{ id: string }[]>(
      `SELECT id::text FROM facilitator.payments WHERE reference = $1`,
      settled.body.receipt.reference,
    );
    paymentIds.push(id);
    return { paymentIntent: settled.body.receipt.reference };
  };
  const account = async (role: keyof typeof AccountCode, asset: string) =>
    (await ledger.ledger.lookupAccounts(merchant.merchantId, [chartAccountId(role, asset)]))[0];
  const gasFees = async () =>
    (
      await ledger.db.$queryRawUnsafe<{ fee: string }[]>(
        `SELECT coalesce(sum((data->>'gasFee')::numeric), 0)::text AS fee FROM facilitator.payment_events WHERE payment_id = ANY($1::uuid[]) AND type = 'payment.confirmed'`,
        paymentIds,
      )
    )[0].fee;

  it('books each settled payment once: a hold when verified, posted when confirmed, and its share of gas', async () => {
    const settled = [await settle(1_250_000n, 4), await settle(2_000_000n, 5), await settle(330_000n, 4)];
    const revenue = await until('the three payments posted', async () => {
      const found = await account('revenue', USDC);
      return found?.creditsPosted === 3_580_000n ? found : undefined;
    });
    expect(revenue).toMatchObject({ creditsPending: 0n, debitsPosted: 0n, code: AccountCode.revenue, asset: USDC });
    expect(await account('payerClearing', USDC)).toMatchObject({ debitsPosted: 3_580_000n, debitsPending: 0n, creditsPosted: 0n });

    const [post] = await ledger.ledger.lookupTransfers(merchant.merchantId, [paymentTransferId(settled[0].paymentId, 'post')]);
    expect(post).toMatchObject({
      amount: 1_250_000n,
      pendingId: paymentTransferId(settled[0].paymentId, 'pending'),
      reference: settled[0].txHash.toLowerCase(),
    });

    const fees = await gasFees();
    expect(BigInt(fees)).toBeGreaterThan(0n);
    const gas = await until('the gas booked', async () => {
      const found = await account('gasExpense', GAS);
      return found?.debitsPosted === BigInt(fees) ? found : undefined;
    });
    expect(gas.asset).toBe(GAS);
    expect(await account('gasFunding', GAS)).toMatchObject({ creditsPosted: BigInt(fees) });
  });

  it('books a Stripe payment and the fee Stripe kept, named by its balance transaction', async () => {
    const { paymentIntent } = await payWithStripe('2500');
    const fee = await until('the Stripe fee booked', async () => {
      const found = await account('processorFees', USD);
      return found && found.creditsPosted > 0n ? found : undefined;
    });
    const intent = await stripe.buyer.paymentIntents.retrieve(paymentIntent, { expand: ['latest_charge.balance_transaction'] });
    const txn = (intent.latest_charge as { balance_transaction: { id: string; fee: number } }).balance_transaction;
    expect(fee.creditsPosted).toBe(BigInt(txn.fee));
    expect(await account('revenue', USD)).toMatchObject({ creditsPosted: 2500n, debitsPosted: BigInt(txn.fee) });
    const [feeTransfer] = await ledger.ledger.lookupTransfers(merchant.merchantId, [paymentTransferId(paymentIds.at(-1)!, 'fee')]);
    expect(feeTransfer).toMatchObject({ reference: txn.id, code: TransferCode.fee });
  });

  it('books an event delivered twice once', async () => {
    const redis = new Redis(facilitator.config.redisUrl, { maxRetriesPerRequest: null });
    const queue = new Queue<PaymentEventMessage>(PAYMENT_EVENTS_QUEUE, { connection: redis, prefix: facilitator.config.queuePrefix });
    const events = await ledger.db.$queryRawUnsafe<
      (Omit<PaymentEventMessage, 'payment' | 'occurredAt'> & { occurredAt: Date; payment: PaymentEventMessage['payment'] })[]
    >(
      `SELECT e.id::text AS "eventId", e.type, e.payment_id::text AS "paymentId", p.merchant_id::text AS "merchantId", e.created_at AS "occurredAt", e.data,
              json_build_object('id', p.id, 'state', p.state, 'protocol', p.protocol, 'rail', p.rail, 'network', p.network, 'asset', p.asset, 'payer', p.payer,
                'payTo', p.pay_to, 'amount', p.amount::text, 'nonce', p.authorization_nonce, 'scheme', p.scheme, 'challengeId', p.challenge_id,
                'reference', p.reference, 'txHash', p.tx_hash, 'merchantId', p.merchant_id) AS payment
         FROM facilitator.payment_events e JOIN facilitator.payments p ON p.id = e.payment_id WHERE p.id = ANY($1::uuid[]) ORDER BY e.id`,
      paymentIds,
    );
    const before = await account('revenue', USDC);
    const beforeUsd = await account('revenue', USD);
    // the same events again under new job ids (as after a Redis failover lost BullMQ's dedupe), confirmed ones first
    for (const event of [...events].reverse()) {
      await queue.add(event.type, { ...event, occurredAt: event.occurredAt.toISOString() } as PaymentEventMessage, { jobId: `replay-${event.eventId}` });
    }
    // every replay taken and finished by the ledger's consumer: booked (nothing new) or skipped, none refused
    const outcomes = await until('the replays finished', async () => {
      const jobs = await Promise.all(events.map((event) => queue.getJob(`replay-${event.eventId}`)));
      return jobs.every((job) => job?.finishedOn) ? jobs.map((job) => job!.returnvalue ?? `failed: ${job!.failedReason}`) : undefined;
    });
    expect(outcomes.filter((outcome) => outcome !== 'booked' && outcome !== 'skipped')).toEqual([]);
    expect(outcomes).toContain('booked');
    expect(await account('revenue', USDC)).toMatchObject({ creditsPosted: before!.creditsPosted, debitsPosted: 0n, creditsPending: 0n });
    expect(await account('revenue', USD)).toMatchObject({ creditsPosted: beforeUsd!.creditsPosted, debitsPosted: beforeUsd!.debitsPosted });
    expect((await queue.getFailed()).filter((j) => j.id?.startsWith('replay-'))).toEqual([]);
    await queue.close();
    redis.disconnect();
  });

  it('refuses a job that breaks the payment-events contract for good: failed at once, with the reason, nothing booked', async () => {
    const redis = new Redis(facilitator.config.redisUrl, { maxRetriesPerRequest: null });
    const queue = new Queue(PAYMENT_EVENTS_QUEUE, { connection: redis, prefix: facilitator.config.queuePrefix });
    const paymentId = randomUUID();
    const malformed = {
      eventId: '900000001',
      type: 'payment.confirmed',
      paymentId,
      merchantId: merchant.merchantId,
      occurredAt: new Date().toISOString(),
      // an amount as a number and no block: not what the facilitator writes
      data: { txHash: `0x${'ab'.repeat(32)}`, blockNumber: 5, gasUsed: '21000', gasFee: '21000' },
      payment: {
        id: paymentId,
        state: 'confirmed',
        protocol: 'x402',
        rail: 'evm',
        network: manifest.network,
        asset: usdc.address,
        payer: payTo,
        payTo,
        amount: 5000,
        nonce: '0x01',
        scheme: 'exact',
        challengeId: null,
        reference: null,
        txHash: null,
        merchantId: merchant.merchantId,
      },
    };
    // attempts to spare: a failure BullMQ would retry would come back; this one must not
    const job = await queue.add('payment.confirmed', malformed, { jobId: `malformed-${paymentId}`, attempts: 5, backoff: { type: 'fixed', delay: 10 } });
    const failed = await until('the malformed job failed', async () => {
      const found = await queue.getJob(job.id!);
      return found?.failedReason ? found : undefined;
    });
    expect(await failed.getState()).toBe('failed');
    expect(failed.attemptsMade).toBe(1);
    expect(failed.failedReason).toMatch(/^malformed payment event: /);
    expect(failed.failedReason).toContain('data.blockNumber');
    expect(failed.failedReason).toContain('payment.amount');
    expect((await queue.getFailed()).map((j) => j.id)).toContain(job.id);
    expect(await ledger.ledger.lookupTransfers(merchant.merchantId, [paymentTransferId(paymentId, 'pending'), paymentTransferId(paymentId, 'post')])).toEqual(
      [],
    );
    // the failed set is the operator's; the metrics test below expects it empty
    await failed.remove();
    await queue.close();
    redis.disconnect();
  });

  it('voids a failed payment, books one confirmed after that directly, and takes events in any order', async () => {
    const ingestion = ledger.app.get(PaymentIngestion);
    const merchantId = randomUUID();
    const event = (paymentId: string, eventId: number, type: PaymentEventMessage['type'], data: Record<string, unknown> = {}): PaymentEventMessage =>
      ({
        eventId: String(eventId),
        type,
        paymentId,
        merchantId,
        occurredAt: new Date().toISOString(),
        data,
        payment: {
          id: paymentId,
          state: 'verified',
          protocol: 'mpp',
          rail: 'stripe',
          network: 'stripe',
          asset: 'usd',
          payer: 'spt_x',
          payTo: 'profile_x',
          amount: '500',
          nonce: 'ch',
          scheme: 'stripe',
          challengeId: `ch_${paymentId}`,
          reference: null,
          txHash: null,
          merchantId,
        },
      }) as PaymentEventMessage;
    const revenue = async () => (await ledger.ledger.lookupAccounts(merchantId, [chartAccountId('revenue', 'stripe/usd')]))[0]!;

    const failedThenSettled = randomUUID();
    await ingestion.book(event(failedThenSettled, 1, 'payment.verified'));
    expect(await revenue()).toMatchObject({ creditsPending: 500n, creditsPosted: 0n });
    await ingestion.book(event(failedThenSettled, 2, 'payment.failed', { reason: 'card_declined' }));
    expect(await revenue()).toMatchObject({ creditsPending: 0n, creditsPosted: 0n });
    await ingestion.book(event(failedThenSettled, 3, 'payment.retried'));
    await ingestion.book(event(failedThenSettled, 4, 'payment.confirmed', { reference: 'late-settlement' }));
    await ingestion.book(event(failedThenSettled, 4, 'payment.confirmed', { reference: 'late-settlement' }));
    expect(await revenue()).toMatchObject({ creditsPending: 0n, creditsPosted: 500n });
    expect(await ledger.ledger.lookupTransfers(merchantId, [paymentTransferId(failedThenSettled, 'late')])).toMatchObject([
      { amount: 500n, reference: 'late-settlement', flags: 0 },
    ]);

    // confirmed delivered before verified, and an expiry of another payment before its verification
    const early = randomUUID();
    await ingestion.book(event(early, 6, 'payment.confirmed', { reference: 'early-settlement' }));
    await ingestion.book(event(early, 5, 'payment.verified'));
    const expired = randomUUID();
    await ingestion.book(event(expired, 8, 'payment.expired'));
    await ingestion.book(event(expired, 7, 'payment.verified'));
    expect(await revenue()).toMatchObject({ creditsPending: 0n, creditsPosted: 1000n });

    // open mode: no merchant, no booking
    expect(
      await ingestion.book({
        ...event(randomUUID(), 9, 'payment.verified'),
        merchantId: null,
        payment: { ...event('x', 9, 'payment.verified').payment, merchantId: null },
      }),
    ).toBe('skipped');
  });

  const api = (method: 'GET' | 'POST', path: string, body?: unknown) =>
    call(`${ledger.url}${path}`, { method, key: merchant.apiKey, ...(body !== undefined && { body }) });
  const reconcile = async () => {
    const started = await api('POST', '/reconciliations', { from: period.from.toISOString(), to: period.to.toISOString() });
    expect(started.status, JSON.stringify(started.body)).toBe(202);
    return until('the run', async () => {
      const run = await api('GET', `/reconciliations/${started.body.id}`);
      return run.body.status === 'completed' || run.body.status === 'failed' ? run.body : undefined;
    });
  };
  const breaksOf = async (id: string): Promise<ReconRowJson[]> => (await api('GET', `/reconciliations/${id}/rows?kind=breaks`)).body.data;

  it('reconciles the ingested payments against the chain and Stripe: all matched', async () => {
    const run = await reconcile();
    expect(run.status, run.error).toBe('completed');
    // three chain payments; the Stripe payment and its fee
    expect(run.summary).toMatchObject({ rows: 5, breaks: 0, counts: { matched: 5, pending: 0 } });
    const totals = run.totals.find((t: { asset: string }) => t.asset === USDC);
    expect(totals).toMatchObject({ source: 'chain', ledger: { count: 3, net: '3580000' }, external: { count: 3, net: '3580000' } });
  });

  it('reports each injected break exactly once with its kind; correcting transfers resolve them', async () => {
    // 1. on chain, never booked: a payer pays the merchant's address directly
    const payer = createWalletClient({ account: payerAccount(manifest, 6), chain, transport: http(manifest.rpcUrl) });
    const hash = await payer.writeContract({ address: usdc.address as Address, abi: erc20Abi, functionName: 'transfer', args: [payTo, 77_000n] });
    const receipt = await client.waitForTransactionReceipt({ hash });
    const log = receipt.logs.find((l) => l.address.toLowerCase() === usdc.address.toLowerCase())!;
    // 2. booked, never on chain: a payment transfer naming a transaction that does not exist
    const ghost = `0x${'ab'.repeat(32)}`;
    const ghostId = '7b7b7b7b-0000-4000-8000-000000000001';
    // 3. amount mismatch: the second payment corrected by +1,000 in the ledger only
    const correctionId = '7b7b7b7b-0000-4000-8000-000000000002';
    const booked = await api('POST', '/transfers', [
      {
        id: ghostId,
        debitAccountId: chartAccountId('payerClearing', USDC),
        creditAccountId: chartAccountId('revenue', USDC),
        amount: '5000',
        asset: USDC,
        code: TransferCode.payment,
        reference: ghost,
      },
      {
        id: correctionId,
        debitAccountId: chartAccountId('payerClearing', USDC),
        creditAccountId: chartAccountId('revenue', USDC),
        amount: '1000',
        asset: USDC,
        code: TransferCode.correction,
        reference: paymentTransferId(paymentIds[1], 'pending'),
      },
    ]);
    expect(
      booked.body.results?.map((r: { result: string }) => r.result),
      JSON.stringify(booked.body),
    ).toEqual(['created', 'created']);

    // 4. a Stripe refund the ledger never booked
    const [stripePayment] = await ledger.db.$queryRawUnsafe<{ reference: string }[]>(
      `SELECT reference FROM facilitator.payments WHERE id = $1::uuid`,
      paymentIds.at(-1),
    );
    const refund = await stripe.buyer.refunds.create({ payment_intent: stripePayment.reference, amount: 700 });

    const run = await reconcile();
    const breaks = (await breaksOf(run.id)).map((b) => [b.kind, b.reference]).sort();
    expect(breaks).toEqual(
      [
        ['missing_in_ledger', `${hash}:${log.logIndex}`],
        ['missing_in_ledger', refund.id],
        ['missing_externally', ghost],
        ['amount_mismatch', expect.stringMatching(/^0x[0-9a-f]{64}:\d+$/)],
      ].sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
    );
    expect(run.summary).toMatchObject({ breaks: 4, counts: { matched: 4 } });

    // the merchant is told once, by a signed webhook naming the new breaks and the report
    const notice = await until('the breaks webhook', async () => receiver.received.find((w) => JSON.parse(w.body).type === 'reconciliation.breaks_found'));
    expect(verifyWebhookSignature({ secret: merchant.webhookSecret, headers: notice.headers, body: notice.body })).toMatchObject({ ok: true });
    expect(JSON.parse(notice.body).data).toMatchObject({
      runId: run.id,
      merchantId: merchant.merchantId,
      newBreakCount: 4,
      reportPath: expect.stringMatching(new RegExp(`^/reconciliations/${run.id}/report`)),
    });

    // resolved by new transfers only: book the direct payment, reverse the ghost, take the correction back
    const resolved = await api('POST', '/transfers', [
      {
        id: '7b7b7b7b-0000-4000-8000-000000000003',
        debitAccountId: chartAccountId('payerClearing', USDC),
        creditAccountId: chartAccountId('revenue', USDC),
        amount: '77000',
        asset: USDC,
        code: TransferCode.payment,
        reference: `${hash}:${log.logIndex}`,
      },
      {
        id: '7b7b7b7b-0000-4000-8000-000000000004',
        debitAccountId: chartAccountId('revenue', USDC),
        creditAccountId: chartAccountId('payerClearing', USDC),
        amount: '5000',
        asset: USDC,
        code: TransferCode.correction,
        reference: ghostId,
      },
      {
        id: '7b7b7b7b-0000-4000-8000-000000000005',
        debitAccountId: chartAccountId('revenue', USDC),
        creditAccountId: chartAccountId('payerClearing', USDC),
        amount: '1000',
        asset: USDC,
        code: TransferCode.correction,
        reference: correctionId,
      },
      {
        id: '7b7b7b7b-0000-4000-8000-000000000006',
        debitAccountId: chartAccountId('revenue', USD),
        creditAccountId: chartAccountId('payerClearing', USD),
        amount: '700',
        asset: USD,
        code: TransferCode.refund,
        reference: refund.id,
      },
    ]);
    expect(
      resolved.body.results?.map((r: { result: string }) => r.result),
      JSON.stringify(resolved.body),
    ).toEqual(['created', 'created', 'created', 'created']);
    const clean = await reconcile();
    expect(clean.summary).toMatchObject({ breaks: 0, counts: { matched: 7 } });
    expect(await ledger.ledger.lookupTransfers(merchant.merchantId, [ghostId])).toMatchObject([{ amount: 5000n, flags: 0 }]);
  });

  it('counts what it booked and what reconciliation found in /metrics', async () => {
    const text = await (await fetch(`${ledger.url}/metrics`)).text();
    const value = (series: string) => Number(new RegExp(`^${series.replace(/[{}]/g, '\\$&')} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
    expect(value('ledger_payment_events_total{type="payment.confirmed",outcome="booked"}')).toBeGreaterThanOrEqual(4);
    expect(value('ledger_payment_events_total{type="payment.submitted",outcome="skipped"}')).toBeGreaterThanOrEqual(3);
    expect(value('ledger_payment_event_lag_seconds_count')).toBeGreaterThanOrEqual(8);
    expect(value('ledger_ingestion_queue_jobs{state="failed"}')).toBe(0);
    expect(value('reconciliation_runs_total{outcome="clean"}')).toBe(2);
    expect(value('reconciliation_runs_total{outcome="breaks"}')).toBe(1);
    expect(value('reconciliation_breaks_found_total{kind="missing_in_ledger"}')).toBe(2);
    expect(value('reconciliation_breaks_found_total{kind="amount_mismatch"}')).toBe(1);
  });
});
