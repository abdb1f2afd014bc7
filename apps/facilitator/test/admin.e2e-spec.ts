import { createHash } from 'node:crypto';
import { getAddress, type Address } from 'viem';
import { Redis } from 'ioredis';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { PrismaService } from '@mp/db';
import { payerAccount, signAuthorization, testChain, v2Body, v2Requirements } from '../../../test/support/chain';
import { startFacilitator, TEST_OPERATOR_TOKEN, type RunningFacilitator } from '../../../test/support/facilitator';
import { call, type Answer } from '../../../test/support/http';
import { createMerchant } from '../../../test/support/merchants';
import { startWebhookReceiver, until, type ReceivedWebhook, type WebhookReceiver } from '../../../test/support/webhook-receiver';
import { FACILITATOR_QUEUES } from '../src/admin/queues-board';

/**
 * The operator API (/admin/merchants…) and bull-board (/admin/queues) on a real facilitator, PostgreSQL, Redis and
 * chain: every operation with the operator token, refusals without it, problems naming bad fields, and the effect
 * of each operation where a merchant sees it (its key settles or is refused, its webhooks are signed with the
 * rotated secret, a resent delivery arrives again).
 */
describe('operator API', () => {
  const { manifest } = testChain();
  const usdc = manifest.tokens.usdc;
  const merchantAddress = manifest.accounts.merchant.address as Address;
  const network = manifest.network;
  const amount = 3_210n;
  let facilitator: RunningFacilitator;
  let db: PrismaService;
  const receivers: WebhookReceiver[] = [];

  /** A request to the facilitator with the operator token (or `token`, or none when null). */
  const admin = (path: string, init: { method?: string; body?: unknown; token?: string | null } = {}): Promise<Answer> =>
    call(`${facilitator.url}${path}`, { method: init.method, body: init.body, ...(init.token === null ? {} : { key: init.token ?? TEST_OPERATOR_TOKEN }) });
  const settle = async (apiKey: string, payerIndex = 9) => {
    const body = v2Body(
      await signAuthorization(payerAccount(manifest, payerIndex), usdc, manifest.chainId, { to: merchantAddress, value: amount }),
      v2Requirements(manifest, usdc, amount),
    );
    return call(`${facilitator.url}/settle`, { key: apiKey, body });
  };
  const newMerchant = async (body: Record<string, unknown> = {}) => {
    const created = await admin('/admin/merchants', { body: { name: 'Operator-made', receivingAddresses: [{ network, address: merchantAddress }], ...body } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body as { merchant: { merchantId: string }; apiKey: { keyId: string; apiKey: string }; webhookSecret: string };
  };
  const attemptLog = (deliveryId: string) =>
    db.$queryRawUnsafe<{ attempt: number; response_status: number | null }[]>(
      `SELECT attempt, response_status FROM facilitator.webhook_delivery_attempts WHERE delivery_id = $1::uuid ORDER BY id`,
      deliveryId,
    );
  const headersOf = (r: ReceivedWebhook) => r.headers as Record<string, string>;
  /**
   * Failed attempts are counted against 127.0.0.1 (every test client) for a minute, per QUEUE_PREFIX: this file starts
   * without those of the spec files before it, and leaves none of its own wrong tokens to the next.
   */
  const forgetFailedAttempts = async () => {
    const redis = new Redis(facilitator.config.redisUrl);
    const counted = await redis.keys(`${facilitator.config.queuePrefix}:authfail:*`);
    if (counted.length) await redis.del(...counted);
    redis.disconnect();
  };

  beforeAll(async () => {
    facilitator = await startFacilitator({
      FACILITATOR_OPEN_MODE: 'false',
      API_KEY_CACHE_MS: '0',
      FACILITATOR_SIGNER_KEYS: manifest.accounts.facilitatorSigners[2].privateKey,
      WEBHOOK_POLL_MS: '50',
      WEBHOOK_RETRY_BASE_MS: '200',
      WEBHOOK_TIMEOUT_MS: '2000',
    });
    db = facilitator.app.get(PrismaService);
    await forgetFailedAttempts();
  });
  afterAll(async () => {
    await facilitator?.close();
    for (const receiver of receivers) receiver.close();
    await forgetFailedAttempts();
  });

  it('refuses requests without the operator token, with a wrong one and with a merchant API key: 401, and nothing is made', async () => {
    const merchant = createMerchant('Not an operator');
    const name = `Sneaky ${Date.now()}`;
    for (const token of [null, 'wrong-token-wrong-token-wrong-token', merchant.apiKey]) {
      for (const [method, path] of [
        ['GET', '/admin/merchants'],
        ['POST', '/admin/merchants'],
        ['GET', `/admin/merchants/${merchant.merchantId}`],
        ['POST', `/admin/merchants/${merchant.merchantId}/api-keys`],
      ]) {
        const answer = await admin(path, { method, token, ...(method === 'POST' ? { body: { name } } : {}) });
        expect(answer, `${method} ${path} with ${token === null ? 'no token' : token}`).toMatchObject({
          status: 401,
          body: { code: 'unauthorized', type: 'urn:problem:unauthorized' },
        });
        expect(answer.headers.get('content-type')).toMatch(/^application\/problem\+json/);
        expect(answer.headers.get('www-authenticate')).toBe('Bearer realm="operator"');
      }
    }
    expect(await db.merchant.count({ where: { name } })).toBe(0);
    expect(await db.apiKey.count({ where: { merchantId: merchant.merchantId } })).toBe(1);
  });

  it("creates a merchant whose key is shown once and settles a payment, with the CLI's key hashing and secret format", async () => {
    const created = await admin('/admin/merchants', {
      body: {
        name: '  Weather API  ',
        receivingAddresses: [
          { network, address: merchantAddress.toLowerCase() },
          { network, address: merchantAddress },
        ],
        keyName: 'production',
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.headers.get('cache-control')).toBe('no-store');
    const { merchant, apiKey, webhookSecret } = created.body;
    expect(merchant).toEqual({
      merchantId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: 'Weather API',
      webhookUrl: null,
      allowAnyPayTo: false,
      receivingAddresses: [{ network, address: getAddress(merchantAddress), createdAt: expect.any(String) }],
      apiKeys: [{ keyId: apiKey.keyId, prefix: apiKey.prefix, name: 'production', createdAt: expect.any(String), lastUsedAt: null, revokedAt: null }],
      createdAt: expect.any(String),
      disabledAt: null,
    });
    expect(apiKey.apiKey).toMatch(new RegExp(`^mpk_${apiKey.prefix}_[a-z2-7]{32}$`));
    expect(webhookSecret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const row = await db.apiKey.findUniqueOrThrow({ where: { id: apiKey.keyId } });
    expect(row.hash).toBe(createHash('sha256').update(apiKey.apiKey, 'utf8').digest('hex'));
    expect((await db.merchant.findUniqueOrThrow({ where: { id: merchant.merchantId } })).webhookSecret).toBe(webhookSecret);
    expect(await db.merchantReceivingAddress.findMany({ where: { merchantId: merchant.merchantId }, select: { network: true, address: true } })).toEqual([
      { network, address: merchantAddress.toLowerCase() },
    ]);

    // The key is never shown again.
    const read = await admin(`/admin/merchants/${merchant.merchantId}`);
    expect(read).toMatchObject({ status: 200, body: merchant });
    expect(JSON.stringify(read.body)).not.toContain(apiKey.apiKey);
    expect(JSON.stringify(read.body)).not.toContain(webhookSecret);

    const settled = await settle(apiKey.apiKey);
    expect(settled).toMatchObject({ status: 200, body: { success: true, transaction: expect.stringMatching(/^0x/) } });
    const payment = await db.payment.findFirstOrThrow({ where: { txHash: settled.body.transaction.toLowerCase() } });
    expect(payment.merchantId).toBe(merchant.merchantId);
  });

  it('lists merchants page by page in creation order, each once', async () => {
    const made = [await newMerchant({ name: 'Page 1' }), await newMerchant({ name: 'Page 2' }), await newMerchant({ name: 'Page 3' })].map(
      (m) => m.merchant.merchantId,
    );
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: Answer = await admin(`/admin/merchants?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.status, JSON.stringify(page.body)).toBe(200);
      expect(page.body.data.length).toBeLessThanOrEqual(2);
      seen.push(...page.body.data.map((m: { merchantId: string }) => m.merchantId));
      cursor = page.body.nextCursor;
      pages++;
    } while (cursor);
    expect(pages).toBeGreaterThanOrEqual(2);
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen.filter((id) => made.includes(id))).toEqual(made);
    expect(seen.length).toBe(await db.merchant.count());
  });

  it('answers 400 problems naming each bad field, unknown fields included, and 404 for a merchant that does not exist', async () => {
    const bad = async (path: string, init: { method?: string; body?: unknown }, expected: { name: string; reason?: unknown }[]) => {
      const answer = await admin(path, init);
      expect(answer.status, `${path} ${JSON.stringify(init.body)}: ${JSON.stringify(answer.body)}`).toBe(400);
      expect(answer.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(answer.body).toMatchObject({
        type: 'urn:problem:validation_failed',
        code: 'validation_failed',
        title: 'The request body is invalid',
        status: 400,
        instance: path,
      });
      expect(answer.body.invalidParams).toEqual(expected.map((e) => ({ name: e.name, reason: e.reason ?? expect.any(String) })));
      const what = path.includes('?') ? 'query parameter' : init.body === undefined ? 'path parameter' : 'field';
      expect(answer.body.detail).toBe(`invalid ${what}(s): ${[...new Set(expected.map((e) => e.name))].join(', ')}`);
    };
    await bad('/admin/merchants', { body: {} }, [{ name: 'name', reason: 'must be a string of 1 to 200 characters' }]);
    await bad('/admin/merchants', { body: { name: 'x', discount: 5 } }, [{ name: 'discount', reason: 'unknown field' }]);
    await bad('/admin/merchants', { body: { name: '   ', allowAnyPayTo: 'yes' } }, [
      { name: 'name' },
      { name: 'allowAnyPayTo', reason: 'must be true or false' },
    ]);
    await bad(
      '/admin/merchants',
      {
        body: {
          name: 'x',
          receivingAddresses: [
            { network, address: '0x1234' },
            { network: 'solana:1', address: merchantAddress, memo: 'hi' },
          ],
        },
      },
      [
        { name: 'receivingAddresses.0.address', reason: 'must be a 0x-prefixed 20-byte hex address' },
        { name: 'receivingAddresses.1.network', reason: 'must be a CAIP-2 EVM network id, e.g. eip155:8453' },
        { name: 'receivingAddresses.1.memo', reason: 'unknown field' },
      ],
    );
    // one letter of a checksummed address in the other case: still mixed-case, no longer the checksum
    const checksummed = getAddress(merchantAddress);
    const letter = checksummed.slice(2).search(/[a-fA-F]/) + 2;
    const flipped = checksummed[letter] === checksummed[letter].toLowerCase() ? checksummed[letter].toUpperCase() : checksummed[letter].toLowerCase();
    const wrongChecksum = `${checksummed.slice(0, letter)}${flipped}${checksummed.slice(letter + 1)}`;
    await bad('/admin/merchants', { body: { name: 'x', receivingAddresses: [{ network, address: wrongChecksum }] } }, [
      { name: 'receivingAddresses.0.address', reason: `has a wrong EIP-55 checksum (did you mean ${checksummed}?)` },
    ]);
    await bad('/admin/merchants', { body: { name: 'x', webhookUrl: 'ftp://files.example/hooks' } }, [
      { name: 'webhookUrl', reason: 'the webhook URL must be http:// or https://' },
    ]);
    await bad('/admin/merchants', { body: { name: 7, webhookUrl: 7, receivingAddresses: 'eip155:1:0x0', keyName: 'k'.repeat(201) } }, [
      { name: 'name', reason: 'must be a string of 1 to 200 characters' },
      { name: 'webhookUrl', reason: 'must be an http(s) URL or null' },
      { name: 'receivingAddresses', reason: 'must be an array of { network, address }' },
      { name: 'keyName', reason: 'must be a string of 1 to 200 characters' },
    ]);
    await bad('/admin/merchants', { body: { name: 'x', webhookUrl: `https://hooks.example/${'x'.repeat(2048)}`, receivingAddresses: ['eip155:1:0x0'] } }, [
      { name: 'webhookUrl', reason: 'must be at most 2048 characters' },
      { name: 'receivingAddresses.0', reason: 'must be an object { network, address }' },
    ]);
    for (const body of [[{ name: 'x' }], '"x"', '5']) {
      const refused = await admin('/admin/merchants', { body });
      expect(refused, JSON.stringify(body)).toMatchObject({
        status: 400,
        body: { code: 'validation_failed', invalidParams: [{ name: '(body)', reason: 'must be a JSON object' }] },
      });
    }
    await bad('/admin/merchants?limit=0&sort=name', { method: 'GET' }, [
      { name: 'limit', reason: 'must be an integer from 1 to 100' },
      { name: 'sort', reason: 'unknown query parameter' },
    ]);
    await bad('/admin/merchants?cursor=bm90IGEgY3Vyc29y', { method: 'GET' }, [{ name: 'cursor', reason: 'must be the nextCursor of a previous page' }]);
    await bad('/admin/merchants/not-a-uuid', { method: 'GET' }, [{ name: 'merchantId', reason: 'must be a merchant id (a UUID)' }]);

    const { merchant } = await newMerchant();
    const id = merchant.merchantId;
    await bad(`/admin/merchants/${id}/webhook`, { method: 'PUT', body: {} }, [{ name: 'webhookUrl', reason: 'must be an http(s) URL or null' }]);
    await bad(`/admin/merchants/${id}/webhook`, { method: 'PUT', body: { webhookUrl: 5, secret: 'x' } }, [
      { name: 'webhookUrl', reason: 'must be an http(s) URL or null' },
      { name: 'secret', reason: 'unknown field' },
    ]);
    await bad(`/admin/merchants/${id}/api-keys`, { body: { name: '' } }, [{ name: 'name', reason: 'must be a string of 1 to 200 characters' }]);
    await bad(`/admin/merchants/${id}/api-keys/nope/revoke`, { method: 'POST' }, [{ name: 'keyId', reason: 'must be an API key id (a UUID)' }]);
    await bad(`/admin/merchants/${id}/webhook-deliveries?status=lost`, { method: 'GET' }, [
      { name: 'status', reason: 'must be one of pending, delivered, failed' },
    ]);
    await bad(`/admin/merchants/${id}/webhook-deliveries/x/resend`, { method: 'POST' }, [
      { name: 'deliveryId', reason: 'must be a webhook delivery id (a UUID)' },
    ]);

    const nobody = '00000000-0000-4000-8000-000000000000';
    for (const [method, path] of [
      ['GET', ''],
      ['POST', '/disable'],
      ['POST', '/enable'],
      ['POST', '/api-keys'],
      ['POST', '/webhook/rotate-secret'],
      ['GET', '/webhook-deliveries'],
    ]) {
      expect(await admin(`/admin/merchants/${nobody}${path}`, { method }), `${method} ${path}`).toMatchObject({
        status: 404,
        body: { code: 'not_found', detail: `no merchant ${nobody}` },
      });
    }
    expect(await admin(`/admin/merchants/${nobody}/webhook`, { method: 'PUT', body: { webhookUrl: null } })).toMatchObject({
      status: 404,
      body: { code: 'not_found' },
    });
    expect(await admin(`/admin/merchants/${id}/api-keys/${nobody}/revoke`, { method: 'POST' })).toMatchObject({ status: 404, body: { code: 'not_found' } });
    expect(await admin(`/admin/merchants/${id}/webhook-deliveries/${nobody}/resend`, { method: 'POST' })).toMatchObject({
      status: 409,
      body: { code: 'webhook_not_configured' },
    });
  });

  it('disables a merchant (its key is refused, no key can be made for it) and enables it again', async () => {
    const { merchant, apiKey } = await newMerchant({ name: 'Disabled for a while' });
    expect(await call(`${facilitator.url}/merchants/me`, { key: apiKey.apiKey })).toMatchObject({ status: 200 });

    const disabled = await admin(`/admin/merchants/${merchant.merchantId}/disable`, { method: 'POST' });
    expect(disabled).toMatchObject({ status: 200, body: { merchantId: merchant.merchantId, disabledAt: expect.any(String) } });
    // Disabling again keeps the first time.
    expect((await admin(`/admin/merchants/${merchant.merchantId}/disable`, { method: 'POST' })).body.disabledAt).toBe(disabled.body.disabledAt);
    expect(await settle(apiKey.apiKey)).toMatchObject({ status: 401, body: { code: 'unauthorized' } });
    expect(await call(`${facilitator.url}/merchants/me`, { key: apiKey.apiKey })).toMatchObject({ status: 401 });
    expect(await admin(`/admin/merchants/${merchant.merchantId}/api-keys`, { body: {} })).toMatchObject({
      status: 409,
      body: { code: 'merchant_disabled', type: 'urn:problem:merchant_disabled' },
    });

    expect(await admin(`/admin/merchants/${merchant.merchantId}/enable`, { method: 'POST' })).toMatchObject({ status: 200, body: { disabledAt: null } });
    expect(await settle(apiKey.apiKey)).toMatchObject({ status: 200, body: { success: true } });
  });

  it('makes and revokes API keys, only ever of the merchant in the path', async () => {
    const { merchant, apiKey: first } = await newMerchant({ name: 'Two keys' });
    const other = await newMerchant({ name: 'Someone else' });
    const made = await admin(`/admin/merchants/${merchant.merchantId}/api-keys`, { body: { name: 'ci' } });
    expect(made).toMatchObject({
      status: 201,
      body: { merchantId: merchant.merchantId, name: 'ci', revokedAt: null, apiKey: expect.stringMatching(/^mpk_[a-z2-7]{8}_[a-z2-7]{32}$/) },
    });
    const second = made.body;
    expect(await call(`${facilitator.url}/merchants/me`, { key: second.apiKey })).toMatchObject({
      status: 200,
      body: { merchantId: merchant.merchantId, keyId: second.keyId },
    });
    const unnamed = await admin(`/admin/merchants/${merchant.merchantId}/api-keys`, { method: 'POST' });
    expect(unnamed).toMatchObject({ status: 201, body: { name: null } });

    // Another merchant's path does not reach this key.
    expect(await admin(`/admin/merchants/${other.merchant.merchantId}/api-keys/${second.keyId}/revoke`, { method: 'POST' })).toMatchObject({ status: 404 });
    expect(await call(`${facilitator.url}/merchants/me`, { key: second.apiKey })).toMatchObject({ status: 200 });

    const revoked = await admin(`/admin/merchants/${merchant.merchantId}/api-keys/${second.keyId}/revoke`, { method: 'POST' });
    expect(revoked).toMatchObject({ status: 200, body: { keyId: second.keyId, revokedAt: expect.any(String) } });
    expect(revoked.body).not.toHaveProperty('apiKey');
    expect((await admin(`/admin/merchants/${merchant.merchantId}/api-keys/${second.keyId}/revoke`, { method: 'POST' })).body.revokedAt).toBe(
      revoked.body.revokedAt,
    );
    expect(await call(`${facilitator.url}/merchants/me`, { key: second.apiKey })).toMatchObject({ status: 401 });
    expect(await call(`${facilitator.url}/merchants/me`, { key: first.apiKey })).toMatchObject({ status: 200 });
    const listed = (await admin(`/admin/merchants/${merchant.merchantId}`)).body.apiKeys;
    expect(listed.map((k: { keyId: string; revokedAt: string | null }) => [k.keyId, k.revokedAt !== null])).toEqual([
      [first.keyId, false],
      [second.keyId, true],
      [unnamed.body.keyId, false],
    ]);
  });

  it('declares and removes receiving addresses, switches allowAnyPayTo, and rotates the MPP secret', async () => {
    const { merchant, apiKey } = await newMerchant({ name: 'Addresses', receivingAddresses: [] });
    const base = `/admin/merchants/${merchant.merchantId}`;
    expect(await settle(apiKey.apiKey)).toMatchObject({ status: 200, body: { success: false, errorReason: 'pay_to_not_allowed' } });

    const lower = merchantAddress.toLowerCase();
    expect(await admin(`${base}/receiving-addresses`, { body: { network, address: lower } })).toMatchObject({
      status: 201,
      body: { network, address: getAddress(merchantAddress) },
    });
    expect(await admin(`${base}/receiving-addresses`, { body: { network, address: merchantAddress } })).toMatchObject({ status: 200 });
    expect(await settle(apiKey.apiKey)).toMatchObject({ status: 200, body: { success: true } });
    const bad = await admin(`${base}/receiving-addresses`, {
      body: { network: 'solana:mainnet', address: '0x0000000000000000000000000000000000000000', extra: 1 },
    });
    expect(bad).toMatchObject({ status: 400, body: { code: 'validation_failed' } });
    expect(bad.body.invalidParams.map((p: { name: string }) => p.name).sort()).toEqual(['address', 'extra', 'network']);

    expect(await admin(`${base}/receiving-addresses/${network}/${merchantAddress}`, { method: 'DELETE' })).toMatchObject({ status: 204 });
    expect(await admin(`${base}/receiving-addresses/${network}/${merchantAddress}`, { method: 'DELETE' })).toMatchObject({
      status: 404,
      body: { code: 'not_found' },
    });
    expect((await admin(base)).body.receivingAddresses).toEqual([]);

    expect(await admin(base, { method: 'PATCH', body: { allowAnyPayTo: true } })).toMatchObject({ status: 200, body: { allowAnyPayTo: true } });
    expect(await settle(apiKey.apiKey)).toMatchObject({ status: 200, body: { success: true } });
    expect(await admin(base, { method: 'PATCH', body: { allowAnyPayTo: 'yes' } })).toMatchObject({
      status: 400,
      body: { invalidParams: [{ name: 'allowAnyPayTo' }] },
    });
    expect(await admin(`/admin/merchants/${crypto.randomUUID()}`, { method: 'PATCH', body: { allowAnyPayTo: false } })).toMatchObject({ status: 404 });

    // A rotation keeps the secret it replaces as the previous one (accepted for an hour).
    const secrets = () =>
      db.$queryRawUnsafe<{ secret: string; previous_secret: string | null }[]>(
        `SELECT secret, previous_secret FROM facilitator.mpp_secrets WHERE scope = $1`,
        merchant.merchantId,
      );
    const first = await admin(`${base}/mpp-secret/rotate`, { method: 'POST' });
    expect(first).toMatchObject({ status: 200, body: { merchantId: merchant.merchantId, rotatedAt: expect.any(String) } });
    const [before] = await secrets();
    expect(await admin(`${base}/mpp-secret/rotate`, { method: 'POST' })).toMatchObject({ status: 200 });
    const [after] = await secrets();
    expect(after.previous_secret).toBe(before.secret);
    expect(after.secret).not.toBe(before.secret);
    expect(await admin(`/admin/merchants/${crypto.randomUUID()}/mpp-secret/rotate`, { method: 'POST' })).toMatchObject({ status: 404 });
  });

  it('sets the webhook URL, rotates the secret webhooks are signed with, lists deliveries and resends one as a new attempt', async () => {
    const receiver = await startWebhookReceiver();
    receivers.push(receiver);
    const { merchant, apiKey, webhookSecret: oldSecret } = await newMerchant({ name: 'Webhooks by the operator' });
    const id = merchant.merchantId;
    expect(await admin(`/admin/merchants/${id}/webhook`, { method: 'PUT', body: { webhookUrl: receiver.url } })).toMatchObject({
      status: 200,
      body: { merchantId: id, webhookUrl: receiver.url },
    });
    receiver.verifyWith(oldSecret);

    const first = await settle(apiKey.apiKey);
    expect(first.body).toMatchObject({ success: true });
    const delivered = await until('the first webhook', () => receiver.received[0]);
    expect(new Webhook(oldSecret).verify(delivered.body, headersOf(delivered))).toMatchObject({ type: 'payment.confirmed' });

    const rotated = await admin(`/admin/merchants/${id}/webhook/rotate-secret`, { method: 'POST' });
    expect(rotated).toMatchObject({ status: 200, body: { merchantId: id, webhookSecret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/) } });
    const newSecret: string = rotated.body.webhookSecret;
    expect(newSecret).not.toBe(oldSecret);
    receiver.verifyWith(newSecret);

    const second = await settle(apiKey.apiKey);
    expect(second.body).toMatchObject({ success: true });
    const next = await until('the second webhook', () => receiver.received[1]);
    expect(JSON.parse(next.body).data.payment.txHash).toBe(second.body.transaction);
    expect(new Webhook(newSecret).verify(next.body, headersOf(next))).toMatchObject({ type: 'payment.confirmed' });
    expect(() => new Webhook(oldSecret).verify(next.body, headersOf(next))).toThrow(WebhookVerificationError);

    const listed = await until('both deliveries recorded as delivered', async () => {
      const page = await admin(`/admin/merchants/${id}/webhook-deliveries`);
      return page.body.data?.length === 2 && page.body.data.every((d: { status: string }) => d.status === 'delivered') ? page : undefined;
    });
    expect(listed.body.nextCursor).toBeNull();
    const [newest, oldest] = listed.body.data;
    expect(oldest).toEqual({
      deliveryId: delivered.headers['webhook-id'],
      eventType: 'payment.confirmed',
      eventId: expect.stringMatching(/^[0-9]+$/),
      noticeId: null,
      url: receiver.url,
      status: 'delivered',
      attempt: 1,
      responseStatus: 204,
      error: null,
      nextAttemptAt: null,
      createdAt: expect.any(String),
      deliveredAt: expect.any(String),
    });
    expect(newest.deliveryId).toBe(next.headers['webhook-id']);
    const firstPage = await admin(`/admin/merchants/${id}/webhook-deliveries?limit=1&status=delivered`);
    expect(firstPage.body.data.map((d: { deliveryId: string }) => d.deliveryId)).toEqual([newest.deliveryId]);
    const secondPage = await admin(`/admin/merchants/${id}/webhook-deliveries?limit=1&status=delivered&cursor=${firstPage.body.nextCursor}`);
    expect(secondPage.body).toMatchObject({ data: [{ deliveryId: oldest.deliveryId }], nextCursor: null });
    expect((await admin(`/admin/merchants/${id}/webhook-deliveries?status=failed`)).body).toEqual({ data: [], nextCursor: null });

    // Resending the first delivery: the same id and body again, now signed with the new secret, as attempt 2.
    const resent = await admin(`/admin/merchants/${id}/webhook-deliveries/${oldest.deliveryId}/resend`, { method: 'POST' });
    expect(resent).toMatchObject({
      status: 202,
      body: { deliveryId: oldest.deliveryId, status: 'pending', attempt: 1, deliveredAt: null, nextAttemptAt: expect.any(String) },
    });
    const again = await until('the resent webhook', () => receiver.received[2]);
    expect(again.headers['webhook-id']).toBe(delivered.headers['webhook-id']);
    expect(again.body).toBe(delivered.body);
    expect(new Webhook(newSecret).verify(again.body, headersOf(again))).toMatchObject({ id: oldest.deliveryId });
    const after = await until('the resent delivery to be recorded', async () => {
      const page = await admin(`/admin/merchants/${id}/webhook-deliveries`);
      const row = page.body.data.find((d: { deliveryId: string }) => d.deliveryId === oldest.deliveryId);
      return row?.status === 'delivered' ? row : undefined;
    });
    expect(after).toMatchObject({ attempt: 2, responseStatus: 204 });
    expect(await attemptLog(oldest.deliveryId)).toEqual([
      { attempt: 1, response_status: 204 },
      { attempt: 2, response_status: 204 },
    ]);

    // Cleared: nothing to resend to.
    expect(await admin(`/admin/merchants/${id}/webhook`, { method: 'PUT', body: { webhookUrl: null } })).toMatchObject({
      status: 200,
      body: { webhookUrl: null },
    });
    expect(await admin(`/admin/merchants/${id}/webhook-deliveries/${oldest.deliveryId}/resend`, { method: 'POST' })).toMatchObject({
      status: 409,
      body: { code: 'webhook_not_configured' },
    });
    expect(receiver.received).toHaveLength(3);
  });

  it("serves bull-board at /admin/queues with the token (Bearer, or Basic from a browser), showing the facilitator's queues; 401 without", async () => {
    const page = await fetch(`${facilitator.url}/admin/queues`, { headers: { authorization: `Bearer ${TEST_OPERATOR_TOKEN}` } });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await page.text()).toContain('<base href="/admin/queues/" />');
    const asset = await fetch(`${facilitator.url}/admin/queues/static/favicon-32x32.png`, { headers: { authorization: `Bearer ${TEST_OPERATOR_TOKEN}` } });
    expect(asset.status).toBe(200);
    expect(asset.headers.get('content-type')).toBe('image/png');
    await asset.arrayBuffer();
    const queues = await call(`${facilitator.url}/admin/queues/api/queues`, { key: TEST_OPERATOR_TOKEN });
    expect(queues.status).toBe(200);
    expect(queues.body.queues.map((q: { name: string }) => q.name).sort()).toEqual([...FACILITATOR_QUEUES].sort());
    // An action, as the page sends it (a JSON body our own body reader has already read): nothing failed to retry.
    const retried = await call(`${facilitator.url}/admin/queues/api/queues/payment-events-acks/retry/failed`, {
      method: 'PUT',
      key: TEST_OPERATOR_TOKEN,
      body: {},
    });
    expect(retried.status, JSON.stringify(retried.body)).toBe(200);
    const basic = await fetch(`${facilitator.url}/admin/queues`, {
      headers: { authorization: `Basic ${Buffer.from(`operator:${TEST_OPERATOR_TOKEN}`).toString('base64')}` },
    });
    expect(basic.status).toBe(200);
    await basic.arrayBuffer();

    const refusedHeaders: Record<string, string>[] = [
      {},
      { authorization: 'Bearer wrong-token-wrong-token-wrong-token' },
      { authorization: `Basic ${Buffer.from('operator:wrong').toString('base64')}` },
    ];
    for (const headers of refusedHeaders) {
      for (const path of ['/admin/queues', '/admin/queues/api/queues']) {
        const refused = await fetch(`${facilitator.url}${path}`, { headers });
        expect(refused.status, `${path} ${JSON.stringify(headers)}`).toBe(401);
        expect(refused.headers.get('www-authenticate')).toContain('Basic realm="operator"');
        expect(await refused.json()).toMatchObject({ code: 'unauthorized', instance: path });
      }
    }
  });

  describe('a facilitator without OPERATOR_TOKEN', () => {
    let off: RunningFacilitator;
    beforeAll(async () => {
      off = await startFacilitator({ OPERATOR_TOKEN: '', FACILITATOR_ROLE: 'api' });
    });
    afterAll(() => off?.close());

    it('answers 404 on /admin and /admin/queues, whatever token is sent', async () => {
      expect(off.config.operatorToken).toBeUndefined();
      for (const path of ['/admin/merchants', '/admin/queues', '/admin/queues/api/queues']) {
        for (const key of [undefined, TEST_OPERATOR_TOKEN]) {
          const answer = await call(`${off.url}${path}`, { key });
          expect(answer, path).toMatchObject({ status: 404, body: { code: 'not_found', detail: expect.stringContaining('OPERATOR_TOKEN is not set') } });
        }
      }
    });
  });

  describe('failed attempts and webhook destinations', () => {
    let strict: RunningFacilitator;
    beforeAll(async () => {
      // Its own queue prefix: the failed attempts of 127.0.0.1 it counts are no other test's. API only: no workers.
      strict = await startFacilitator({
        FACILITATOR_ROLE: 'api',
        AUTH_FAILURES_PER_MINUTE: '3',
        QUEUE_PREFIX: `mp:test-admin-${Date.now()}`,
        WEBHOOK_ALLOW_PRIVATE: 'false',
      });
    });
    afterAll(() => strict?.close());

    it('refuses a private webhook destination as PUT /merchants/me/webhook does', async () => {
      const created = await call(`${strict.url}/admin/merchants`, {
        key: TEST_OPERATOR_TOKEN,
        body: { name: 'Private hooks', webhookUrl: 'http://127.0.0.1:9/hooks' },
      });
      expect(created).toMatchObject({
        status: 400,
        body: { code: 'webhook_destination_not_allowed', invalidParams: [{ name: 'webhookUrl', reason: expect.stringContaining('loopback') }] },
      });
      const merchant = createMerchant('Private hooks later');
      const set = await call(`${strict.url}/admin/merchants/${merchant.merchantId}/webhook`, {
        method: 'PUT',
        key: TEST_OPERATOR_TOKEN,
        body: { webhookUrl: 'http://169.254.169.254/latest' },
      });
      expect(set).toMatchObject({ status: 400, body: { code: 'webhook_destination_not_allowed' } });
      expect((await db.merchant.findUniqueOrThrow({ where: { id: merchant.merchantId } })).webhookUrl).toBeNull();
      const fine = await call(`${strict.url}/admin/merchants/${merchant.merchantId}/webhook`, {
        method: 'PUT',
        key: TEST_OPERATOR_TOKEN,
        body: { webhookUrl: 'https://hooks.example/x' },
      });
      expect(fine).toMatchObject({ status: 200, body: { webhookUrl: 'https://hooks.example/x' } });
    });

    it('counts wrong tokens against AUTH_FAILURES_PER_MINUTE: past it even the right token waits (429)', async () => {
      for (let i = 0; i < 3; i++) {
        expect((await call(`${strict.url}/admin/merchants`, { key: `wrong-${i}-token-token-token-token-token` })).status).toBe(401);
      }
      const locked = await call(`${strict.url}/admin/merchants`, { key: TEST_OPERATOR_TOKEN });
      expect(locked).toMatchObject({ status: 429, body: { code: 'rate_limited', retryAfter: expect.any(Number) } });
      expect(Number(locked.headers.get('retry-after'))).toBeGreaterThan(0);
      const board = await fetch(`${strict.url}/admin/queues`, { headers: { authorization: `Bearer ${TEST_OPERATOR_TOKEN}` } });
      expect(board.status).toBe(429);
      await board.arrayBuffer();
    });
  });
});
