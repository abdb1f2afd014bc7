import type { Address } from 'viem';
import { PrismaService } from '@mp/db';
import { payerAccount, signAuthorization, testChain, v2Body, v2Requirements } from '../../../test/support/chain';
import { postJson, startFacilitator, type RunningFacilitator } from '../../../test/support/facilitator';
import { until } from '../../../test/support/webhook-receiver';
import { WebhookRepository } from '../src/merchants/webhooks/webhook.repository';
import { MerchantNoticesConsumer } from '../src/merchants/webhooks/merchant-notices.consumer';
import { WebhookDispatcher } from '../src/merchants/webhooks/webhook-dispatcher';
import { OutboxAcks } from '../src/outbox/outbox-acks.consumer';
import { OutboxRelay } from '../src/outbox/outbox.relay';
import { SettlementMetrics } from '../src/settlement/settlement.metrics';
import { SettlementQueue } from '../src/settlement/settlement.queue';
import { SettlementService } from '../src/settlement/settlement.service';
import { SettlementWorker } from '../src/settlement/settlement.worker';
import { SignerLeases } from '../src/settlement/signer-leases';
import { StripeOutcomes } from '../src/stripe/stripe-outcomes';
import { StripeSweep } from '../src/stripe/stripe-sweep';
import { FacilitatorWorkersModule } from '../src/workers.module';

/** Every provider that only a worker-role process may have: what consumes a queue, holds a lease or polls a table. */
const WORKER_PROVIDERS = [SettlementWorker, SignerLeases, StripeSweep, OutboxRelay, OutboxAcks, WebhookDispatcher, MerchantNoticesConsumer];
/** What an api process keeps of the same areas: the settlement producer, the repositories, the backlog metrics. */
const API_PROVIDERS = [SettlementService, SettlementQueue, SettlementMetrics, WebhookRepository, StripeOutcomes];

/** FACILITATOR_ROLE composes modules: api processes do not import FacilitatorWorkersModule (docs/runbook.md). */
describe('FACILITATOR_ROLE api and worker', () => {
  const { manifest, client } = testChain();
  const usdc = manifest.tokens.usdc;
  const merchant = manifest.accounts.merchant.address as Address;
  const amount = 23_456n;
  // Its own queue: no facilitator of another test can take this payment's job.
  const env = { QUEUE_PREFIX: `mp:test-roles-${Date.now()}` };
  let api: RunningFacilitator;
  let worker: RunningFacilitator | undefined;
  let db: PrismaService;

  beforeAll(async () => {
    // A short budget: without a worker, /settle waits this long and then answers settlement_pending.
    api = await startFacilitator({ ...env, FACILITATOR_ROLE: 'api', SETTLE_BUDGET_MS: '1500' });
    db = api.app.get(PrismaService);
  });
  afterAll(async () => {
    await worker?.close();
    await api?.close();
  });

  const paymentState = async (nonce: string) =>
    (await db.$queryRawUnsafe<{ state: string }[]>(`SELECT state::text FROM facilitator.payments WHERE authorization_nonce = $1`, nonce.toLowerCase()))[0]
      ?.state;

  it('an api process has none of the worker providers, and keeps what the API needs', () => {
    for (const provider of [...WORKER_PROVIDERS, FacilitatorWorkersModule]) {
      expect(() => api.app.get(provider, { strict: false }), provider.name).toThrow();
    }
    for (const provider of API_PROVIDERS) expect(api.app.get(provider, { strict: false }), provider.name).toBeInstanceOf(provider);
  });

  it('/settle on an api process claims the payment and answers settlement_pending; a worker process then settles it', async () => {
    const payer = payerAccount(manifest, 6);
    const payload = await signAuthorization(payer, usdc, manifest.chainId, { to: merchant, value: amount });
    const body = v2Body(payload, v2Requirements(manifest, usdc, amount));

    const pending = await postJson(`${api.url}/settle`, body);
    expect(pending.status).toBe(200);
    expect(pending.body).toMatchObject({ success: false, errorReason: 'settlement_pending', transaction: '', payer: payer.address });
    expect(await paymentState(payload.authorization.nonce)).toBe('verified');
    // The api process still reports the backlog it added to: its job waits in the queue, read at scrape time.
    const metrics = await (await fetch(`${api.url}/metrics`)).text();
    expect(metrics).toMatch(/^settlement_queue_depth\{[^}]*state="waiting"[^}]*\} 1$/m);

    worker = await startFacilitator({ ...env, FACILITATOR_ROLE: 'worker' });
    for (const provider of WORKER_PROVIDERS) expect(worker.app.get(provider, { strict: false }), provider.name).toBeInstanceOf(provider);

    await until(
      'the worker to confirm the payment',
      async () => ((await paymentState(payload.authorization.nonce)) === 'confirmed' ? true : undefined),
      40_000,
    );
    const settled = await postJson(`${api.url}/settle`, body);
    expect(settled.body).toEqual({ success: true, transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/), network: manifest.network, payer: payer.address });
    expect((await client.getTransactionReceipt({ hash: settled.body.transaction })).status).toBe('success');
  });
});
