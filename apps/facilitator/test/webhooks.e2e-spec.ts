import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { Socket } from 'node:net';
import pg from 'pg';
import type { Address } from 'viem';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { verifyWebhookSignature } from '@mp/clients';
import { PrismaService } from '@mp/db';
import { WebhookRepository } from '../src/merchants/webhooks/webhook.repository';
import { payerAccount, signAuthorization, testChain, v2Body, v2Requirements } from '../../../test/support/chain';
import { createMerchant, merchantsCli } from '../../../test/support/merchants';
import { startWebhookReceiver, until, type WebhookReceiver } from '../../../test/support/webhook-receiver';
import { startFacilitator, TEST_DATABASE_URL, type RunningFacilitator } from '../../../test/support/facilitator';
import { call } from '../../../test/support/http';
import { freePort } from '../../../test/support/net';

describe('webhooks to merchants', () => {
  const { manifest } = testChain();
  const usdc = manifest.tokens.usdc;
  const merchantAddress = manifest.accounts.merchant.address as Address;
  const amount = 5_555n;
  const otherSecret = `whsec_${randomBytes(32).toString('base64')}`;
  let facilitator: RunningFacilitator;
  let db: PrismaService;
  const servers: WebhookReceiver[] = [];

  const settle = async (apiKey: string, token = usdc) => {
    const body = v2Body(
      await signAuthorization(payerAccount(manifest, 7), token, manifest.chainId, { to: merchantAddress, value: amount }),
      v2Requirements(manifest, token, amount),
    );
    const response = await fetch(`${facilitator.url}/settle`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
      body: JSON.stringify(body),
    });
    return { nonce: body.paymentPayload.payload.authorization.nonce.toLowerCase(), answer: (await response.json()) as any };
  };
  const deliveries = (merchantId: string) =>
    db.$queryRawUnsafe<
      { id: string; event_type: string; status: string; attempt: number; response_status: number | null; error: string | null; delivered_at: Date | null }[]
    >(
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
    expect(merchant.webhookSecret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    receiver.verifyWith(merchant.webhookSecret);

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
      // Standard Webhooks (the receiver verified each with the standardwebhooks package); our own check agrees
      expect(r.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
      expect(verifyWebhookSignature({ secret: merchant.webhookSecret, headers: r.headers, body: r.body })).toMatchObject({
        ok: true,
        id: r.headers['webhook-id'],
      });
      expect(() => new Webhook(otherSecret).verify(r.body, r.headers as Record<string, string>)).toThrow(WebhookVerificationError);
    }

    const event = JSON.parse(accepted.body);
    expect(event).toEqual({
      id: accepted.headers['webhook-id'],
      type: 'payment.confirmed',
      createdAt: expect.stringMatching(/Z$/),
      data: { payment: expect.any(Object) },
    });
    const read = await fetch(`${facilitator.url}/payments/${event.data.payment.id}`, { headers: { authorization: `Bearer ${merchant.apiKey}` } });
    expect(event.data.payment).toEqual(await read.json());
    expect(event.data.payment).toMatchObject({ state: 'confirmed', amount: '5555', txHash: answer.transaction });

    const [delivery] = await until('the delivery to be recorded', async () => {
      const rows = await deliveries(merchant.merchantId);
      return rows[0]?.status === 'delivered' ? rows : undefined;
    });
    expect(delivery).toMatchObject({
      id: event.id,
      event_type: 'payment.confirmed',
      status: 'delivered',
      attempt: 3,
      response_status: 204,
      error: null,
      delivered_at: expect.any(Date),
    });
    expect(await attemptLog(delivery.id)).toEqual([
      { attempt: 1, response_status: 500, error: 'HTTP 500' },
      { attempt: 2, response_status: 500, error: 'HTTP 500' },
      { attempt: 3, response_status: 204, error: null },
    ]);
    // Only the final outcome is sent: verified and submitted are not. A second payment's delivery proves the
    // dispatcher has read past all of the first payment's events (they committed before the second was asked for).
    const second = await settle(merchant.apiKey);
    expect(second.answer).toMatchObject({ success: true });
    const both = await until('the second payment to be delivered', async () => {
      const rows = await deliveries(merchant.merchantId);
      return rows.length >= 2 && rows.every((r) => r.status === 'delivered') ? rows : undefined;
    });
    expect(both.map((d) => d.event_type)).toEqual(['payment.confirmed', 'payment.confirmed']);
  });

  it('sends payment.failed with the reason, and gives up after WEBHOOK_MAX_ATTEMPTS on an unreachable receiver', async () => {
    const receiver = await startWebhookReceiver();
    servers.push(receiver);
    const failing = createMerchant('Failed payments', receiver.url);
    receiver.verifyWith(failing.webhookSecret);
    const token = manifest.tokens.misreportingUsdc;
    expect((await settle(failing.apiKey, token)).answer).toMatchObject({ success: false, errorReason: 'invalid_exact_evm_transfer_event_mismatch' });
    const got = await until('payment.failed', () => receiver.received[0]);
    expect(JSON.parse(got.body)).toMatchObject({
      type: 'payment.failed',
      data: { payment: { state: 'failed', errorReason: 'invalid_exact_evm_transfer_event_mismatch', txHash: expect.stringMatching(/^0x/) } },
    });

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

    const receiver = await startWebhookReceiver({
      failures: 99,
      onRequest: async () => {
        // The merchant is disabled while its first attempt is being answered (with a 500).
        await db.$executeRawUnsafe(`UPDATE facilitator.merchants SET disabled_at = now() WHERE id = $1::uuid`, disabled.merchantId);
      },
    });
    servers.push(receiver);
    const disabled = createMerchant('Disabled later', receiver.url);
    receiver.verifyWith(disabled.webhookSecret);
    expect((await settle(disabled.apiKey)).answer).toMatchObject({ success: true });
    const [delivery] = await until('the delivery to fail', async () => {
      const rows = await deliveries(disabled.merchantId);
      return rows[0]?.status === 'failed' ? rows : undefined;
    });
    expect(delivery).toMatchObject({ attempt: 2, error: 'the merchant is disabled' });
    expect(receiver.received).toHaveLength(1);
    expect(await deliveries(silent.merchantId)).toEqual([]);
  });

  /** A confirmed payment of the merchant, inserted directly: its events are what these tests write by hand. */
  const newPayment = async (merchantId: string) =>
    (
      await db.$queryRawUnsafe<{ id: string }[]>(
        `INSERT INTO facilitator.payments (network, asset, payer, authorization_nonce, pay_to, amount, valid_after, valid_before, scheme, x402_version,
                                           payload_hash, state, updated_at, merchant_id, tx_hash)
         VALUES ($1, $2, $3, $4, $5, 1, 0, 9999999999, 'exact', 2, 'test', 'confirmed', now(), $6::uuid, $7) RETURNING id::text`,
        manifest.network,
        usdc.address.toLowerCase(),
        payerAccount(manifest, 7).address.toLowerCase(),
        `0x${randomBytes(32).toString('hex')}`,
        merchantAddress.toLowerCase(),
        merchantId,
        `0x${randomBytes(32).toString('hex')}`,
      )
    )[0].id;
  // created an hour ago: a cursor that trusted an event's age would move past it at once
  const EVENT = `INSERT INTO facilitator.payment_events (payment_id, type, data, created_at) VALUES ($1::uuid, 'payment.confirmed', '{"reference":"pi_webhooks_spec"}'::jsonb, now() - interval '1 hour')`;
  const paymentOf = (r: { body: string }) => JSON.parse(r.body).data.payment.id as string;

  it('delivers the event of a slow transaction that commits after a later event was already delivered', async () => {
    const receiver = await startWebhookReceiver();
    servers.push(receiver);
    const merchant = createMerchant('Slow transactions', receiver.url);
    receiver.verifyWith(merchant.webhookSecret);
    const [slow, quick] = [await newPayment(merchant.merchantId), await newPayment(merchant.merchantId)];

    const held = new pg.Client({ connectionString: TEST_DATABASE_URL });
    await held.connect();
    try {
      // The slow transaction takes its event id first and stays open.
      await held.query('BEGIN');
      await held.query(EVENT.replace('$1::uuid', `'${slow}'::uuid`));
      const [{ id: slowId, xact }] = (
        await held.query<{ id: string; xact: string }>(
          `SELECT max(id)::text AS id, pg_current_xact_id()::text AS xact FROM facilitator.payment_events WHERE payment_id = $1`,
          [slow],
        )
      ).rows;
      // A later event commits and is delivered: the dispatcher has read past the slow event's id.
      await db.$executeRawUnsafe(EVENT, quick);
      await until('the later event', () => receiver.received.find((r) => paymentOf(r) === quick));
      const quickId = (await db.$queryRawUnsafe<{ id: string }[]>(`SELECT id::text FROM facilitator.payment_events WHERE payment_id = $1::uuid`, quick))[0].id;
      expect(BigInt(quickId)).toBeGreaterThan(BigInt(slowId));
      // ... but its cursor has not moved past the slow event
      const cursor = await facilitator.app.get(WebhookRepository).cursor();
      const [{ before }] = await db.$queryRawUnsafe<{ before: boolean }[]>(
        `SELECT ($1::xid8, $2::bigint) < ($3::xid8, $4::bigint) AS before`,
        cursor!.xactId,
        cursor!.eventId,
        xact,
        slowId,
      );
      expect(before).toBe(true);

      await held.query('COMMIT');
    } finally {
      await held.end();
    }
    await until('the slow event', () => receiver.received.find((r) => paymentOf(r) === slow));
    const rows = await until('both deliveries to be delivered', async () => {
      const all = await deliveries(merchant.merchantId);
      return all.length === 2 && all.every((d) => d.status === 'delivered') ? all : undefined;
    });
    expect(receiver.received.map(paymentOf).sort()).toEqual([slow, quick].sort());
    expect(rows.map((d) => d.attempt)).toEqual([1, 1]);
  });

  it('ends an attempt whose receiver takes the body and never answers after WEBHOOK_TIMEOUT_MS, and retries it', async () => {
    const sockets = new Set<Socket>();
    const silent = createServer((req) => req.resume()); // reads everything, answers nothing
    silent.on('connection', (socket) => sockets.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const merchant = createMerchant('Never answers', `http://127.0.0.1:${(silent.address() as { port: number }).port}/hooks`);
      await db.$executeRawUnsafe(EVENT, await newPayment(merchant.merchantId));
      const [first] = await until('the first attempt to end', async () => {
        const [delivery] = await deliveries(merchant.merchantId);
        const log = delivery ? await attemptLog(delivery.id) : [];
        return log.length ? log : undefined;
      });
      expect(first).toEqual({ attempt: 1, response_status: null, error: 'no answer within 2000 ms' });
      expect((await deliveries(merchant.merchantId))[0]).toMatchObject({ status: 'pending' });
    } finally {
      for (const socket of sockets) socket.destroy();
      silent.close();
    }
  });

  it('reads the outbox in pages, and moves its cursor only past events no open transaction can precede', async () => {
    await facilitator.close(); // no other dispatcher may read the outbox during this test
    const api = await startFacilitator({ FACILITATOR_ROLE: 'api' });
    db = api.app.get(PrismaService);
    const late = new pg.Client({ connectionString: TEST_DATABASE_URL });
    await late.connect();
    try {
      const repo = api.app.get(WebhookRepository);
      const merchant = createMerchant('Outbox pages', 'http://127.0.0.1:9/hooks');
      await repo.ensureCursor();
      while (await repo.enqueue(1_000)); // catch up with everything earlier tests left
      const queued = async () => (await deliveries(merchant.merchantId)).length;
      const isBefore = async (a: { xactId: string; eventId: string }, b: { xactId: string; eventId: string }) =>
        (
          await db.$queryRawUnsafe<{ before: boolean }[]>(
            `SELECT ($1::xid8, $2::bigint) < ($3::xid8, $4::bigint) AS before`,
            a.xactId,
            a.eventId,
            b.xactId,
            b.eventId,
          )
        )[0].before;

      // An event whose transaction is still open gets its id now but becomes visible only after later events.
      const held = await newPayment(merchant.merchantId);
      await late.query('BEGIN');
      await late.query(EVENT.replace('$1::uuid', `'${held}'::uuid`));
      const [heldAt] = (
        await late.query<{ xactId: string; eventId: string }>(
          `SELECT pg_current_xact_id()::text AS "xactId", max(id)::text AS "eventId" FROM facilitator.payment_events WHERE payment_id = $1`,
          [held],
        )
      ).rows;
      for (let i = 0; i < 5; i++) await db.$executeRawUnsafe(EVENT, await newPayment(merchant.merchantId));

      // All five are queued at once, read two per page, but the cursor stays before the held event.
      expect(await repo.enqueue(2)).toBe(false);
      expect(await queued()).toBe(5);
      expect(await isBefore((await repo.cursor())!, heldAt)).toBe(true);

      // The held event commits late, with a lower id than the five: the next read finds it.
      await late.query('COMMIT');
      expect(await repo.enqueue(2)).toBe(false);
      expect(await queued()).toBe(6);

      // With no transaction open before them, the cursor moves past them all, a page at a time (true: read on).
      const max = (
        await db.$queryRawUnsafe<{ xactId: string; eventId: string }[]>(
          `SELECT xact_id::text AS "xactId", id::text AS "eventId" FROM facilitator.payment_events ORDER BY xact_id DESC, id DESC LIMIT 1`,
        )
      )[0];
      // (xmin is the whole server's: a transaction open in another database delays this, so allow it a while)
      await until(
        'the cursor to pass every event',
        async () => {
          while (await repo.enqueue(2, 1));
          const cursor = await repo.cursor();
          return cursor?.xactId === max.xactId && cursor.eventId === max.eventId ? cursor : undefined;
        },
        50_000,
      );
      expect(await queued()).toBe(6);
    } finally {
      await late.end();
      await api.close();
    }
  });
});

describe('webhook destinations (WEBHOOK_ALLOW_PRIVATE off)', () => {
  const { manifest } = testChain();
  let facilitator: RunningFacilitator;
  let db: PrismaService;
  const servers: WebhookReceiver[] = [];
  /** scripts/merchants.mjs against this facilitator's operator API (which has not allowed private destinations) */
  const cli = (...args: string[]) => merchantsCli(facilitator.url, ...args, '--json');

  beforeAll(async () => {
    facilitator = await startFacilitator({
      FACILITATOR_OPEN_MODE: 'false',
      FACILITATOR_SIGNER_KEYS: manifest.accounts.facilitatorSigners[1].privateKey,
      WEBHOOK_ALLOW_PRIVATE: 'false',
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

  it('refuses to register a loopback, private, link-local or metadata URL, with the reason code', async () => {
    for (const url of [
      'http://127.0.0.1:8080/hooks',
      'http://10.0.0.7/hooks',
      'http://169.254.169.254/latest/meta-data/',
      'http://[::ffff:127.0.0.1]/hooks',
      'http://[fd00:ec2::254]/',
      'http://metadata.google.internal/',
      'http://localhost/hooks',
    ]) {
      const created = await cli('create', '--name', 'SSRF', '--webhook-url', url);
      expect(created.code, url).toBe(2);
      expect(created.stderr, url).toMatch(
        /^merchants: webhook_destination_not_allowed: .+ is a (loopback|private|cloud metadata) (address|name); webhooks go to public addresses only/,
      );
    }
    const merchant = JSON.parse((await cli('create', '--name', 'Public hooks', '--webhook-url', 'https://hooks.example.com/x')).stdout);
    expect(merchant.webhookUrl).toBe('https://hooks.example.com/x');
    const moved = await cli('set-webhook', merchant.merchantId, 'http://192.168.1.10/hooks');
    expect(moved.code).toBe(2);
    expect(moved.stderr).toContain('webhook_destination_not_allowed: 192.168.1.10 is a private address');
  });

  it('refuses a private webhook URL over the API with 400 webhook_destination_not_allowed, and takes a public one', async () => {
    const merchant = createMerchant('Webhook over the API');
    const endpoint = `${facilitator.url}/merchants/me/webhook`;
    const put = (body: unknown) => call(endpoint, { method: 'PUT', key: merchant.apiKey, body });
    for (const url of [
      'http://127.0.0.1:8080/hooks',
      'http://[::ffff:169.254.169.254]/',
      'http://metadata.google.internal/',
      'http://10.1.2.3/',
      'http://[fe80::1]/',
    ]) {
      const refused = await put({ webhookUrl: url });
      expect(refused.status, url).toBe(400);
      expect(refused.body, url).toMatchObject({
        code: 'webhook_destination_not_allowed',
        detail: expect.stringMatching(/ is a (loopback|private|link-local|cloud metadata) (address|name); webhooks go to public addresses only/),
        invalidParams: [{ name: 'webhookUrl' }],
      });
    }
    expect(await put({ webhookUrl: 'ftp://hooks.example.com/' })).toMatchObject({
      status: 400,
      body: { code: 'validation_failed', invalidParams: [{ name: 'webhookUrl', reason: 'the webhook URL must be http:// or https://' }] },
    });
    expect(await put({ webhookUrl: 'https://hooks.example.com/', secret: 'x' })).toMatchObject({
      status: 400,
      body: { code: 'validation_failed', invalidParams: [{ name: 'secret', reason: 'unknown field' }] },
    });
    expect(await put({})).toMatchObject({ status: 400, body: { code: 'validation_failed', invalidParams: [{ name: 'webhookUrl' }] } });
    expect(await call(endpoint, { key: merchant.apiKey })).toMatchObject({ status: 200, body: { merchantId: merchant.merchantId, webhookUrl: null } });

    const url = 'https://hooks.example.com/x402?token=1';
    expect(await put({ webhookUrl: url })).toMatchObject({ status: 200, body: { merchantId: merchant.merchantId, webhookUrl: url } });
    expect(await call(endpoint, { key: merchant.apiKey })).toMatchObject({ status: 200, body: { webhookUrl: url } });
    expect(await put({ webhookUrl: null })).toMatchObject({ status: 200, body: { webhookUrl: null } });
    expect((await call(endpoint, { method: 'PUT', body: { webhookUrl: url } })).status).toBe(401);
  });

  it('at send time refuses a name that resolves to 127.0.0.1 and an IP literal: one failed attempt each, nothing sent', async () => {
    const receiver = await startWebhookReceiver();
    servers.push(receiver);
    // Registered while private destinations were allowed (or a name that resolved elsewhere then: DNS rebinding).
    const byName = createMerchant('Resolves to loopback', receiver.url.replace('127.0.0.1', 'localhost'));
    const byAddress = createMerchant('Loopback literal', receiver.url);
    receiver.verifyWith(byName.webhookSecret);
    for (const merchant of [byName, byAddress]) {
      const payment = (
        await db.$queryRawUnsafe<{ id: string }[]>(
          `INSERT INTO facilitator.payments (network, asset, payer, authorization_nonce, pay_to, amount, valid_after, valid_before, scheme, x402_version,
                                             payload_hash, state, updated_at, merchant_id, tx_hash)
           VALUES ($1, $2, $3, $4, $5, 1, 0, 9999999999, 'exact', 2, 'test', 'confirmed', now(), $6::uuid, $7) RETURNING id::text`,
          manifest.network,
          manifest.tokens.usdc.address.toLowerCase(),
          payerAccount(manifest, 7).address.toLowerCase(),
          `0x${randomBytes(32).toString('hex')}`,
          manifest.accounts.merchant.address.toLowerCase(),
          merchant.merchantId,
          `0x${randomBytes(32).toString('hex')}`,
        )
      )[0].id;
      await db.$executeRawUnsafe(
        `INSERT INTO facilitator.payment_events (payment_id, type, data) VALUES ($1::uuid, 'payment.confirmed', '{"reference":"pi_webhooks_spec"}'::jsonb)`,
        payment,
      );
    }
    const failed = async (merchantId: string) =>
      until(`the delivery of ${merchantId} to fail`, async () => {
        const rows = await db.$queryRawUnsafe<{ id: string; status: string; attempt: number; error: string | null }[]>(
          `SELECT id::text, status::text, attempt, error FROM facilitator.webhook_deliveries WHERE merchant_id = $1::uuid`,
          merchantId,
        );
        return rows[0]?.status === 'failed' ? rows : undefined;
      });
    const [named] = await failed(byName.merchantId);
    expect(named).toMatchObject({
      attempt: 1,
      error: expect.stringMatching(/^webhook_destination_not_allowed: localhost resolves to (127\.0\.0\.1|::1), a loopback address$/),
    });
    const [literal] = await failed(byAddress.merchantId);
    expect(literal).toMatchObject({ attempt: 1, error: 'webhook_destination_not_allowed: 127.0.0.1 is a loopback address' });
    for (const delivery of [named, literal]) {
      expect(
        await db.$queryRawUnsafe(`SELECT attempt, response_status, error FROM facilitator.webhook_delivery_attempts WHERE delivery_id = $1::uuid`, delivery.id),
      ).toEqual([{ attempt: 1, response_status: null, error: delivery.error }]);
    }
    // failed for good after one attempt: nothing is left to send, and nothing reached the receiver
    expect(receiver.received).toEqual([]);
  });
});
