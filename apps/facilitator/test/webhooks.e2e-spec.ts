import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Address } from 'viem';
import { verifyWebhookSignature } from '@mp/clients';
import { PrismaService } from '@mp/db';
import { WebhookRepository } from '../src/merchants/webhooks/webhook.repository';
import { payerAccount, signAuthorization, testChain, v2Body, v2Requirements } from '../../../test/support/chain';
import { createMerchant } from '../../../test/support/merchants';
import { startWebhookReceiver, until, type WebhookReceiver } from '../../../test/support/webhook-receiver';
import { startFacilitator, TEST_DATABASE_URL, type RunningFacilitator } from '../../../test/support/facilitator';
import { freePort } from '../../../test/support/net';

describe('webhooks to merchants', () => {
  const { manifest } = testChain();
  const usdc = manifest.tokens.usdc;
  const merchantAddress = manifest.accounts.merchant.address as Address;
  const amount = 5_555n;
  let facilitator: RunningFacilitator;
  let db: PrismaService;
  const servers: WebhookReceiver[] = [];

  const settle = async (apiKey: string, token = usdc) => {
    const body = v2Body(await signAuthorization(payerAccount(manifest, 7), token, manifest.chainId, { to: merchantAddress, value: amount }), v2Requirements(manifest, token, amount));
    const response = await fetch(`${facilitator.url}/settle`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` }, body: JSON.stringify(body) });
    return { nonce: body.paymentPayload.payload.authorization.nonce.toLowerCase(), answer: (await response.json()) as any };
  };
  const deliveries = (merchantId: string) =>
    db.$queryRawUnsafe<{ id: string; event_type: string; status: string; attempt: number; response_status: number | null; error: string | null; delivered_at: Date | null }[]>(
      `SELECT id::text, event_type, status::text, attempt, response_status, error, delivered_at FROM facilitator.webhook_deliveries WHERE merchant_id = $1::uuid ORDER BY created_at`,
      merchantId,
    );
  const attemptLog = (deliveryId: string) =>
    db.$queryRawUnsafe<{ attempt: number; response_status: number | null; error: string | null }[]>(
      `SELECT attempt, response_status, error FROM facilitator.webhook_delivery_attempts WHERE delivery_id = $1::uuid ORDER BY id`,
      deliveryId,
    );

  beforeAll(async () => {
    facilitator = await startFacilitator({
      FACILITATOR_OPEN_MODE: 'false',
      FACILITATOR_SIGNER_KEYS: manifest.accounts.facilitatorSigners[1].privateKey,
      WEBHOOK_POLL_MS: '50',
      WEBHOOK_RETRY_BASE_MS: '200',
      WEBHOOK_MAX_ATTEMPTS: '3',
      WEBHOOK_TIMEOUT_MS: '2000',
    });
    db = facilitator.app.get(PrismaService);
  });
  afterAll(async () => {
    await facilitator?.close().catch(() => undefined);
    for (const server of servers) server.close();
  });

  it('delivers payment.confirmed to a receiver that fails twice, signed so the receiver can verify it, and logs all three attempts', async () => {
    const receiver = await startWebhookReceiver({ failures: 2 });
    servers.push(receiver);
    const merchant = createMerchant('Webhook merchant', receiver.url);

    const { answer } = await settle(merchant.apiKey);
    expect(answer).toMatchObject({ success: true });

    const accepted = await until('the third attempt', () => receiver.received.find((r) => r.answered === 204));
    const attempts = receiver.received;
    expect(attempts.map((r) => r.answered)).toEqual([500, 500, 204]);
    // One event, three attempts: the same id and the same bytes every time, a fresh signature per attempt.
    expect(new Set(attempts.map((r) => r.headers['webhook-id'])).size).toBe(1);
    expect(new Set(attempts.map((r) => r.body)).size).toBe(1);
    for (const r of attempts) {
      expect(r.headers['content-type']).toBe('application/json');
      expect(r.headers['webhook-signature']).toMatch(/^v1=[0-9a-f]{64}$/);
      expect(verifyWebhookSignature({ secret: merchant.webhookSecret, headers: r.headers, body: r.body })).toMatchObject({ ok: true, id: r.headers['webhook-id'] });
      expect(verifyWebhookSignature({ secret: 'f'.repeat(64), headers: r.headers, body: r.body })).toEqual({ ok: false, reason: 'bad_signature' });
    }

    const event = JSON.parse(accepted.body);
    expect(event).toEqual({ id: accepted.headers['webhook-id'], type: 'payment.confirmed', createdAt: expect.stringMatching(/Z$/), data: { payment: expect.any(Object) } });
    const read = await fetch(`${facilitator.url}/payments/${event.data.payment.id}`, { headers: { authorization: `Bearer ${merchant.apiKey}` } });
    expect(event.data.payment).toEqual(await read.json());
    expect(event.data.payment).toMatchObject({ state: 'confirmed', amount: '5555', txHash: answer.transaction });

    const [delivery] = await until('the delivery to be recorded', async () => {
      const rows = await deliveries(merchant.merchantId);
      return rows[0]?.status === 'delivered' ? rows : undefined;
    });
    expect(delivery).toMatchObject({ id: event.id, event_type: 'payment.confirmed', status: 'delivered', attempt: 3, response_status: 204, error: null, delivered_at: expect.any(Date) });
    expect(await attemptLog(delivery.id)).toEqual([
      { attempt: 1, response_status: 500, error: 'HTTP 500' },
      { attempt: 2, response_status: 500, error: 'HTTP 500' },
      { attempt: 3, response_status: 204, error: null },
    ]);
    // Only the final outcome is sent: verified and submitted are not.
    await new Promise((r) => setTimeout(r, 300));
    expect(await deliveries(merchant.merchantId)).toHaveLength(1);
  });

  it('sends payment.failed with the reason, and gives up after WEBHOOK_MAX_ATTEMPTS on an unreachable receiver', async () => {
    const receiver = await startWebhookReceiver();
    servers.push(receiver);
    const failing = createMerchant('Failed payments', receiver.url);
    const token = manifest.tokens.misreportingUsdc;
    expect((await settle(failing.apiKey, token)).answer).toMatchObject({ success: false, errorReason: 'invalid_exact_evm_transfer_event_mismatch' });
    const got = await until('payment.failed', () => receiver.received[0]);
    expect(JSON.parse(got.body)).toMatchObject({ type: 'payment.failed', data: { payment: { state: 'failed', errorReason: 'invalid_exact_evm_transfer_event_mismatch', txHash: expect.stringMatching(/^0x/) } } });

    const unreachable = createMerchant('Unreachable', `http://127.0.0.1:${await freePort()}/hooks`);
    expect((await settle(unreachable.apiKey)).answer).toMatchObject({ success: true });
    const [delivery] = await until('the delivery to fail', async () => {
      const rows = await deliveries(unreachable.merchantId);
      return rows[0]?.status === 'failed' ? rows : undefined;
    });
    expect(delivery).toMatchObject({ status: 'failed', attempt: 3, response_status: null, delivered_at: null });
    const log = await attemptLog(delivery.id);
    expect(log.map((l) => l.attempt)).toEqual([1, 2, 3]);
    for (const l of log) expect(l.error).toMatch(/ECONNREFUSED|connect/i);
  });

  it('sends nothing for a merchant without a webhook URL, and stops sending to a merchant once it is disabled', async () => {
    const silent = createMerchant('No webhooks');
    expect((await settle(silent.apiKey)).answer).toMatchObject({ success: true });

    const receiver = await startWebhookReceiver({ failures: 99, onRequest: async () => {
      // The merchant is disabled while its first attempt is being answered (with a 500).
      await db.$executeRawUnsafe(`UPDATE facilitator.merchants SET disabled_at = now() WHERE id = $1::uuid`, disabled.merchantId);
    } });
    servers.push(receiver);
    const disabled = createMerchant('Disabled later', receiver.url);
    expect((await settle(disabled.apiKey)).answer).toMatchObject({ success: true });
    const [delivery] = await until('the delivery to fail', async () => {
      const rows = await deliveries(disabled.merchantId);
      return rows[0]?.status === 'failed' ? rows : undefined;
    });
    expect(delivery).toMatchObject({ attempt: 2, error: 'the merchant is disabled' });
    expect(receiver.received).toHaveLength(1);
    expect(await deliveries(silent.merchantId)).toEqual([]);
  });

  it('reads the outbox in pages, picks up an event that commits after a later one, and moves its cursor only past old events', async () => {
    await facilitator.close(); // no other dispatcher may read the outbox during this test
    const api = await startFacilitator({ FACILITATOR_ROLE: 'api' });
    const late = new pg.Client({ connectionString: TEST_DATABASE_URL });
    await late.connect();
    try {
      const repo = api.app.get(WebhookRepository);
      const sql = api.app.get(PrismaService);
      const merchant = createMerchant('Outbox pages', 'http://127.0.0.1:9/hooks');
      await repo.ensureCursor();
      await repo.enqueue(1_000, 0); // catch up with everything earlier tests left
      const cursor = async () => (await sql.$queryRawUnsafe<{ last: string }[]>(`SELECT last_event_id::text AS last FROM facilitator.outbox_cursors WHERE name = 'webhooks'`))[0].last;
      const newPayment = async () =>
        (
          await sql.$queryRawUnsafe<{ id: string }[]>(
            `INSERT INTO facilitator.payments (network, asset, payer, authorization_nonce, pay_to, amount, valid_after, valid_before, scheme, x402_version,
                                               payload_hash, state, updated_at, merchant_id, tx_hash)
             VALUES ($1, $2, $3, $4, $5, 1, 0, 9999999999, 'exact', 2, 'test', 'confirmed', now(), $6::uuid, $7) RETURNING id::text`,
            manifest.network, usdc.address.toLowerCase(), payerAccount(manifest, 7).address.toLowerCase(), `0x${randomBytes(32).toString('hex')}`,
            merchantAddress.toLowerCase(), merchant.merchantId, `0x${randomBytes(32).toString('hex')}`,
          )
        )[0].id;
      const event = `INSERT INTO facilitator.payment_events (payment_id, type, data) VALUES ($1::uuid, 'payment.confirmed', '{}'::jsonb)`;
      const queued = async () => (await deliveries(merchant.merchantId)).length;
      const start = await cursor();

      // An event whose transaction is still open gets its id now but becomes visible only after later events.
      const held = await newPayment();
      await late.query('BEGIN');
      await late.query(event.replace('$1::uuid', `'${held}'::uuid`));
      for (let i = 0; i < 5; i++) await sql.$executeRawUnsafe(event, await newPayment());

      // Young events: all five are queued, reading two per page, but the cursor stays.
      expect(await repo.enqueue(2, 60_000)).toBe(false);
      expect(await queued()).toBe(5);
      expect(await cursor()).toBe(start);

      // The held event commits late, with a lower id than the five: the rescan finds it.
      await late.query('COMMIT');
      expect(await repo.enqueue(2, 60_000)).toBe(false);
      expect(await queued()).toBe(6);

      // Once old, the cursor moves past them all (a page at a time: true means read on).
      expect(await repo.enqueue(2, 0, 1)).toBe(true);
      while (await repo.enqueue(2, 0, 1));
      const max = (await sql.$queryRawUnsafe<{ max: string }[]>(`SELECT max(id)::text AS max FROM facilitator.payment_events`))[0].max;
      expect(await cursor()).toBe(max);
      expect(await queued()).toBe(6);
    } finally {
      await late.end();
      await api.close();
    }
  });
});
