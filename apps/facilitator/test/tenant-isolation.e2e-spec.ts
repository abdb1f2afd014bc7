import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { getAddress, type Address } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { Mppx, evm } from 'mppx/client';
import { Redis } from 'ioredis';
import { PrismaService } from '@mp/db';
import { challengeExpiry, issueChallenges, serializeChallenge } from '@mp/mpp';
import { payerAccount, signAuthorization, testChain, v2Body, v2Requirements } from '../../../test/support/chain';
import { startFacilitator, TEST_OPERATOR_TOKEN, type RunningFacilitator } from '../../../test/support/facilitator';
import { call, type Answer } from '../../../test/support/http';
import { createMerchant, type TestMerchant } from '../../../test/support/merchants';
import { paymentRequiredResponse } from '../../../test/support/mpp';

/**
 * Tenant isolation with API keys on: merchant B's key is tried on every operation the OpenAPI document lists for the
 * facilitator, aimed at merchant A's payments, addresses, settings and challenges. Each is refused or answers with
 * B's data only, and A's data is unchanged afterwards. The operation list comes from docs/api/facilitator.openapi.json, so a
 * documented route without a case here fails the first test.
 */
const openapi = JSON.parse(readFileSync(path.resolve(__dirname, '../../../docs/api/facilitator.openapi.json'), 'utf8'));
const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'patch'];
const facilitatorOperations: string[] = Object.entries(openapi.paths as Record<string, Record<string, object>>)
  .flatMap(([p, item]) => HTTP_METHODS.filter((m) => item[m]).map((m) => `${m.toUpperCase()} ${p}`))
  .sort();

interface World {
  url: string;
  a: TestMerchant;
  b: TestMerchant;
  /** the only address A is paid at, and B's */
  aPayTo: Address;
  bPayTo: Address;
  /** a payment A settled, and one B settled */
  aPaymentId: string;
  bPaymentId: string;
  db: PrismaService;
}

type Case =
  /** No merchant's data behind it: answered alike for every caller, and it must not mention A's data. */
  | { kind: 'public'; why: string }
  | { kind: 'tenant'; check: (w: World) => Promise<void> }
  /** The operator API: a merchant key (B's) is refused like any wrong token; the operator token is served. */
  | { kind: 'operator' };

const { manifest } = testChain();
const usdc = manifest.tokens.usdc;
const amount = 2_500n;
const refundOf = (paymentId: string) => ({
  x402Version: 2,
  paymentReference: { network: manifest.network, paymentId },
  amount: '1',
  reason: 'other',
  idempotencyKey: `isolation-${Math.random().toString(36).slice(2)}`,
});
const freshAddress = () => privateKeyToAccount(generatePrivateKey()).address;

const x402Payment = async (payTo: Address, payerIndex: number) =>
  v2Body(
    await signAuthorization(payerAccount(manifest, payerIndex), usdc, manifest.chainId, { to: payTo, value: amount }),
    v2Requirements(manifest, usdc, amount, { payTo }),
  );

const mppTerms = (recipient: Address) => ({
  realm: 'isolation.example',
  offers: [{ method: 'evm', intent: 'charge', request: { amount: '2500', currency: usdc.address, recipient, methodDetails: { chainId: manifest.chainId } } }],
});

/** An MPP credential for a challenge issued with `key`, paid by payer `payerIndex`. */
async function mppCredential(
  w: World,
  key: string,
  recipient: Address,
  payerIndex: number,
): Promise<{ credential: string; terms: ReturnType<typeof mppTerms>; challengeId: string }> {
  const terms = mppTerms(recipient);
  const issued = await call(`${w.url}/mpp/challenges`, { key, body: terms });
  expect(issued.status).toBe(201);
  const payer = Mppx.create({
    methods: [evm.charge({ account: payerAccount(manifest, payerIndex), authorization: { name: usdc.name, version: usdc.version } })],
    polyfill: false,
  });
  return { credential: await payer.createCredential(paymentRequiredResponse(issued.body.wwwAuthenticate)), terms, challengeId: issued.body.challenges[0].id };
}

async function paymentsWithNonce(w: World, body: { paymentPayload: { payload: { authorization: { nonce: string } } } }): Promise<number> {
  const rows = await w.db.$queryRawUnsafe<{ n: number }[]>(
    `SELECT count(*)::int AS n FROM facilitator.payments WHERE authorization_nonce = $1`,
    body.paymentPayload.payload.authorization.nonce.toLowerCase(),
  );
  return rows[0].n;
}

async function addressesOf(w: World, key: string): Promise<{ allowAnyPayTo: boolean; addresses: string[] }> {
  const answer = await call(`${w.url}/merchants/me/receiving-addresses`, { key });
  expect(answer.status).toBe(200);
  return {
    allowAnyPayTo: answer.body.allowAnyPayTo,
    addresses: answer.body.data.map((r: { network: string; address: string }) => `${r.network}:${r.address}`),
  };
}

/**
 * A session channel of A's, written as the facilitator books one (the charge and read paths are SQL over this row;
 * opening one on chain is mpp-evm-session.e2e-spec's business): 5,000 accepted, nothing spent.
 */
async function sessionChannelOfA(w: World): Promise<string> {
  const channelId = `0x${randomBytes(32).toString('hex')}`;
  await w.db.$executeRawUnsafe(
    `INSERT INTO facilitator.session_channels (channel_id, scope, merchant_id, network, chain_id, escrow, token, payer, payee, authorized_signer,
       deposit, accepted_cumulative, spent, settled_on_chain, min_voucher_delta, last_challenge_id, open_tx_hash)
     VALUES ($1, $2::text, $2::uuid, $3, $4, $5, $6, $7, $8, $7, 10000, 5000, 0, 0, 0, 'isolation', $9)`,
    channelId,
    w.a.merchantId,
    manifest.network,
    manifest.chainId,
    manifest.contracts.sessionEscrow.toLowerCase(),
    usdc.address.toLowerCase(),
    freshAddress().toLowerCase(),
    w.aPayTo.toLowerCase(),
    `0x${randomBytes(32).toString('hex')}`,
  );
  return channelId;
}

const spentOf = async (w: World, channelId: string) =>
  (await w.db.$queryRawUnsafe<{ spent: string }[]>(`SELECT spent::text AS spent FROM facilitator.session_channels WHERE channel_id = $1`, channelId))[0]!.spent;

function expectNoTraceOfA(w: World, answer: Answer, route: string): void {
  const text = JSON.stringify(answer.body);
  for (const secret of [w.a.merchantId, w.aPaymentId, w.aPayTo.toLowerCase().slice(2)]) expect(text.toLowerCase(), route).not.toContain(secret.toLowerCase());
}

const cases: Record<string, Case> = {
  'GET /supported': { kind: 'public', why: 'the kinds, networks and signers this facilitator serves' },
  'GET /health': { kind: 'public', why: 'liveness' },
  'GET /ready': { kind: 'public', why: 'readiness of the database, Redis and the chains' },
  'GET /metrics': { kind: 'public', why: 'Prometheus metrics, labelled by network and outcome, never by merchant' },
  'GET /docs': { kind: 'public', why: 'the API reference' },
  'GET /docs/openapi.json': { kind: 'public', why: 'the API reference' },
  'GET /openapi.json': { kind: 'public', why: 'the API reference' },
  'GET /mpp/supported': { kind: 'public', why: 'the MPP methods this facilitator settles' },
  'POST /stripe/webhooks': { kind: 'public', why: "Stripe's own calls, authenticated by Stripe-Signature, not by a merchant key" },

  'GET /admin/merchants': { kind: 'operator' },
  'POST /admin/merchants': { kind: 'operator' },
  'GET /admin/merchants/{merchantId}': { kind: 'operator' },
  'POST /admin/merchants/{merchantId}/disable': { kind: 'operator' },
  'POST /admin/merchants/{merchantId}/enable': { kind: 'operator' },
  'POST /admin/merchants/{merchantId}/api-keys': { kind: 'operator' },
  'POST /admin/merchants/{merchantId}/api-keys/{keyId}/revoke': { kind: 'operator' },
  'PUT /admin/merchants/{merchantId}/webhook': { kind: 'operator' },
  'POST /admin/merchants/{merchantId}/webhook/rotate-secret': { kind: 'operator' },
  'GET /admin/merchants/{merchantId}/webhook-deliveries': { kind: 'operator' },
  'POST /admin/merchants/{merchantId}/webhook-deliveries/{deliveryId}/resend': { kind: 'operator' },
  'PATCH /admin/merchants/{merchantId}': { kind: 'operator' },
  'POST /admin/merchants/{merchantId}/receiving-addresses': { kind: 'operator' },
  'DELETE /admin/merchants/{merchantId}/receiving-addresses/{network}/{address}': { kind: 'operator' },
  'POST /admin/merchants/{merchantId}/mpp-secret/rotate': { kind: 'operator' },

  'GET /merchants/me': {
    kind: 'tenant',
    check: async (w) => {
      const me = await call(`${w.url}/merchants/me`, { key: w.b.apiKey });
      expect(me).toMatchObject({ status: 200, body: { merchantId: w.b.merchantId, keyId: w.b.keyId } });
    },
  },

  'PATCH /merchants/me': {
    kind: 'tenant',
    check: async (w) => {
      const before = await addressesOf(w, w.a.apiKey);
      const changed = await call(`${w.url}/merchants/me`, { method: 'PATCH', key: w.b.apiKey, body: { allowAnyPayTo: true } });
      expect(changed).toMatchObject({ status: 200, body: { merchantId: w.b.merchantId, allowAnyPayTo: true } });
      expect(await addressesOf(w, w.a.apiKey)).toEqual(before);
      expect((await call(`${w.url}/merchants/me`, { method: 'PATCH', key: w.b.apiKey, body: { allowAnyPayTo: false } })).status).toBe(200);
    },
  },

  'GET /merchants/me/webhook': {
    kind: 'tenant',
    check: async (w) => {
      const mine = await call(`${w.url}/merchants/me/webhook`, { key: w.b.apiKey });
      expect(mine).toMatchObject({ status: 200, body: { merchantId: w.b.merchantId } });
    },
  },

  'PUT /merchants/me/webhook': {
    kind: 'tenant',
    check: async (w) => {
      const set = await call(`${w.url}/merchants/me/webhook`, { method: 'PUT', key: w.b.apiKey, body: { webhookUrl: 'https://b.example/hooks' } });
      expect(set).toMatchObject({ status: 200, body: { merchantId: w.b.merchantId, webhookUrl: 'https://b.example/hooks' } });
      expect((await call(`${w.url}/merchants/me/webhook`, { key: w.a.apiKey })).body).toEqual({ merchantId: w.a.merchantId, webhookUrl: null });
      expect((await call(`${w.url}/merchants/me/webhook`, { method: 'PUT', key: w.b.apiKey, body: { webhookUrl: null } })).status).toBe(200);
    },
  },

  'GET /merchants/me/receiving-addresses': {
    kind: 'tenant',
    check: async (w) => {
      const listed = await addressesOf(w, w.b.apiKey);
      expect(listed.addresses).toContain(`${manifest.network}:${w.bPayTo}`);
      expect(listed.addresses).not.toContain(`${manifest.network}:${w.aPayTo}`);
    },
  },

  'POST /merchants/me/receiving-addresses': {
    kind: 'tenant',
    check: async (w) => {
      const before = await addressesOf(w, w.a.apiKey);
      const extra = freshAddress();
      expect((await call(`${w.url}/merchants/me/receiving-addresses`, { key: w.b.apiKey, body: { network: manifest.network, address: extra } })).status).toBe(
        201,
      );
      expect((await addressesOf(w, w.b.apiKey)).addresses).toContain(`${manifest.network}:${extra}`);
      expect(await addressesOf(w, w.a.apiKey)).toEqual(before);
      expect((await call(`${w.url}/merchants/me/receiving-addresses/${manifest.network}/${extra}`, { method: 'DELETE', key: w.b.apiKey })).status).toBe(204);
    },
  },

  'DELETE /merchants/me/receiving-addresses/{network}/{address}': {
    kind: 'tenant',
    check: async (w) => {
      const removal = await call(`${w.url}/merchants/me/receiving-addresses/${manifest.network}/${w.aPayTo}`, { method: 'DELETE', key: w.b.apiKey });
      expect(removal).toMatchObject({ status: 404, body: { code: 'not_found' } });
      expect((await addressesOf(w, w.a.apiKey)).addresses).toEqual([`${manifest.network}:${w.aPayTo}`]);
    },
  },

  'GET /payments': {
    kind: 'tenant',
    check: async (w) => {
      const listed = await call(`${w.url}/payments?limit=100`, { key: w.b.apiKey });
      expect(listed.status).toBe(200);
      const ids = listed.body.data.map((p: { id: string }) => p.id);
      expect(ids).toContain(w.bPaymentId);
      expect(ids).not.toContain(w.aPaymentId);
      expect(listed.body.data.every((p: { payTo: string }) => getAddress(p.payTo) !== w.aPayTo)).toBe(true);
      const owners = await w.db.$queryRawUnsafe<{ merchant_id: string }[]>(
        `SELECT DISTINCT merchant_id::text FROM facilitator.payments WHERE id = ANY($1::uuid[])`,
        ids,
      );
      expect(owners).toEqual([{ merchant_id: w.b.merchantId }]);
    },
  },

  'GET /payments/{id}': {
    kind: 'tenant',
    check: async (w) => {
      expect(await call(`${w.url}/payments/${w.aPaymentId}`, { key: w.b.apiKey })).toMatchObject({ status: 404, body: { code: 'not_found' } });
      expect((await call(`${w.url}/payments/${w.aPaymentId}`, { key: w.a.apiKey })).status).toBe(200);
    },
  },

  'POST /refunds': {
    kind: 'tenant',
    check: async (w) => {
      const body = refundOf(w.aPaymentId);
      expect(await call(`${w.url}/refunds`, { key: w.b.apiKey, body })).toMatchObject({ status: 404, body: { code: 'not_found' } });
      expect(await w.db.refund.count({ where: { paymentId: w.aPaymentId } })).toBe(0);
      // A's own refund is answered (denied here: this facilitator has no refund wallet for A)
      expect(await call(`${w.url}/refunds`, { key: w.a.apiKey, body })).toMatchObject({ status: 200, body: { denialReason: 'refund_wallet_not_configured' } });
    },
  },

  'GET /refunds/{id}': {
    kind: 'tenant',
    check: async (w) => {
      const refund = await call(`${w.url}/refunds`, { key: w.a.apiKey, body: refundOf(w.aPaymentId) });
      expect(await call(`${w.url}/refunds/${refund.body.id}`, { key: w.b.apiKey })).toMatchObject({ status: 404, body: { code: 'not_found' } });
      expect((await call(`${w.url}/refunds/${refund.body.id}`, { key: w.a.apiKey })).status).toBe(200);
    },
  },

  'GET /payments/{id}/refunds': {
    kind: 'tenant',
    check: async (w) => {
      expect(await call(`${w.url}/payments/${w.aPaymentId}/refunds`, { key: w.b.apiKey })).toMatchObject({ status: 404, body: { code: 'not_found' } });
      expect((await call(`${w.url}/payments/${w.aPaymentId}/refunds`, { key: w.a.apiKey })).status).toBe(200);
    },
  },

  'POST /verify': {
    kind: 'tenant',
    check: async (w) => {
      const body = await x402Payment(w.aPayTo, 1);
      const answer = await call(`${w.url}/verify`, { key: w.b.apiKey, body });
      expect(answer).toMatchObject({ status: 200, body: { isValid: false, invalidReason: 'pay_to_not_allowed' } });
      expect((await call(`${w.url}/verify`, { key: w.a.apiKey, body })).body).toMatchObject({ isValid: true });
    },
  },

  'POST /settle': {
    kind: 'tenant',
    check: async (w) => {
      const body = await x402Payment(w.aPayTo, 1);
      const answer = await call(`${w.url}/settle`, { key: w.b.apiKey, body });
      expect(answer).toMatchObject({ status: 200, body: { success: false, errorReason: 'pay_to_not_allowed', transaction: '' } });
      expect(await paymentsWithNonce(w, body)).toBe(0);
      // Untouched by B's attempt: A settles it.
      expect((await call(`${w.url}/settle`, { key: w.a.apiKey, body })).body).toMatchObject({ success: true });
    },
  },

  'POST /mpp/challenges': {
    kind: 'tenant',
    check: async (w) => {
      // A challenge B's key issues is bound to B's secret: A's key does not accept it, so B cannot issue for A.
      const { credential, terms } = await mppCredential(w, w.b.apiKey, w.bPayTo, 2);
      expect((await call(`${w.url}/mpp/verify`, { key: w.a.apiKey, body: { credential, terms } })).body).toMatchObject({
        type: 'https://paymentauth.org/problems/invalid-challenge',
      });
    },
  },

  'POST /mpp/issuance': {
    kind: 'tenant',
    check: async (w) => {
      // B's issuer key is B's own: a challenge bound with it is not A's, and it is not A's key.
      const ofA = await call(`${w.url}/mpp/issuance`, { key: w.a.apiKey, body: mppTerms(w.aPayTo) });
      const ofB = await call(`${w.url}/mpp/issuance`, { key: w.b.apiKey, body: mppTerms(w.bPayTo) });
      expect([ofA.status, ofB.status]).toEqual([200, 200]);
      expect(ofB.body.issuerKey).not.toBe(ofA.body.issuerKey);
      const [challenge] = issueChallenges(ofB.body.issuerKey, { realm: ofB.body.realm, offers: ofB.body.offers }, { expires: challengeExpiry(Date.now(), 60) });
      const payer = Mppx.create({
        methods: [evm.charge({ account: payerAccount(manifest, 2), authorization: { name: usdc.name, version: usdc.version } })],
        polyfill: false,
      });
      const credential = await payer.createCredential(paymentRequiredResponse([serializeChallenge(challenge!)]));
      expect((await call(`${w.url}/mpp/verify`, { key: w.a.apiKey, body: { credential, terms: mppTerms(w.bPayTo) } })).body).toMatchObject({
        type: 'https://paymentauth.org/problems/invalid-challenge',
      });
    },
  },

  'POST /mpp/verify': {
    kind: 'tenant',
    check: async (w) => {
      const ofA = await mppCredential(w, w.a.apiKey, w.aPayTo, 2);
      expect((await call(`${w.url}/mpp/verify`, { key: w.b.apiKey, body: { credential: ofA.credential, terms: ofA.terms } })).body).toMatchObject({
        type: 'https://paymentauth.org/problems/invalid-challenge',
      });
      // B's own challenge for A's address: refused for the address.
      const forA = await mppCredential(w, w.b.apiKey, w.aPayTo, 2);
      const refused = await call(`${w.url}/mpp/verify`, { key: w.b.apiKey, body: { credential: forA.credential, terms: forA.terms } });
      expect(refused).toMatchObject({
        status: 402,
        body: { type: 'https://paymentauth.org/problems/verification-failed', detail: expect.stringContaining('pay_to_not_allowed') },
      });
    },
  },

  'POST /mpp/settle': {
    kind: 'tenant',
    check: async (w) => {
      const ofA = await mppCredential(w, w.a.apiKey, w.aPayTo, 3);
      expect((await call(`${w.url}/mpp/settle`, { key: w.b.apiKey, body: { credential: ofA.credential, terms: ofA.terms } })).body).toMatchObject({
        type: 'https://paymentauth.org/problems/invalid-challenge',
      });
      const forA = await mppCredential(w, w.b.apiKey, w.aPayTo, 3);
      const refused = await call(`${w.url}/mpp/settle`, { key: w.b.apiKey, body: { credential: forA.credential, terms: forA.terms } });
      expect(refused).toMatchObject({
        status: 402,
        body: { type: 'https://paymentauth.org/problems/verification-failed', detail: expect.stringContaining('pay_to_not_allowed') },
      });
      const claimed = await w.db.$queryRawUnsafe<{ n: number }[]>(
        `SELECT count(*)::int AS n FROM facilitator.mpp_claims WHERE challenge_id = ANY($1::text[])`,
        [ofA.challengeId, forA.challengeId],
      );
      expect(claimed[0].n).toBe(0);
      // A's credential was left unused: A settles it.
      const settled = await call(`${w.url}/mpp/settle`, { key: w.a.apiKey, body: { credential: ofA.credential, terms: ofA.terms } });
      expect(settled).toMatchObject({ status: 200, body: { success: true } });
    },
  },

  'POST /mpp/sessions/charges': {
    kind: 'tenant',
    check: async (w) => {
      const channelId = await sessionChannelOfA(w);
      const charge = { channelId, amount: '1000', chargeId: 'isolation-1' };
      const refused = await call(`${w.url}/mpp/sessions/charges`, { key: w.b.apiKey, body: charge });
      expect(refused).toMatchObject({ status: 404, body: { code: 'not_found' } });
      expectNoTraceOfA(w, refused, 'POST /mpp/sessions/charges');
      expect(await spentOf(w, channelId)).toBe('0');
      expect(await call(`${w.url}/mpp/sessions/charges`, { key: w.a.apiKey, body: charge })).toMatchObject({ status: 200, body: { spent: '1000' } });
    },
  },

  'GET /mpp/sessions/{channelId}': {
    kind: 'tenant',
    check: async (w) => {
      const channelId = await sessionChannelOfA(w);
      const refused = await call(`${w.url}/mpp/sessions/${channelId}`, { key: w.b.apiKey });
      expect(refused).toMatchObject({ status: 404, body: { code: 'not_found' } });
      expectNoTraceOfA(w, refused, 'GET /mpp/sessions/{channelId}');
      expect(await call(`${w.url}/mpp/sessions/${channelId}`, { key: w.a.apiKey })).toMatchObject({ status: 200, body: { acceptedCumulative: '5000' } });
    },
  },
};

describe("tenant isolation: merchant B's key on every facilitator operation of merchant A (keys on)", () => {
  let facilitator: RunningFacilitator;
  const w = {} as World;

  beforeAll(async () => {
    // B's key on every operator route counts as a failed attempt each: room for all of them.
    facilitator = await startFacilitator({ FACILITATOR_OPEN_MODE: 'false', API_KEY_CACHE_MS: '0', AUTH_FAILURES_PER_MINUTE: '1000' });
    w.url = facilitator.url;
    w.db = facilitator.app.get(PrismaService);
    w.aPayTo = freshAddress();
    w.bPayTo = freshAddress();
    w.a = createMerchant('Isolation A', undefined, { receivingAddresses: [`${manifest.network}:${w.aPayTo}`] });
    w.b = createMerchant('Isolation B', undefined, { receivingAddresses: [`${manifest.network}:${w.bPayTo}`] });
    const settledBy = async (merchant: TestMerchant, payTo: Address, payerIndex: number) => {
      const body = await x402Payment(payTo, payerIndex);
      expect((await call(`${w.url}/settle`, { key: merchant.apiKey, body })).body).toMatchObject({ success: true });
      const [row] = await w.db.$queryRawUnsafe<{ id: string }[]>(
        `SELECT id FROM facilitator.payments WHERE authorization_nonce = $1`,
        body.paymentPayload.payload.authorization.nonce.toLowerCase(),
      );
      return row.id;
    };
    w.aPaymentId = await settledBy(w.a, w.aPayTo, 1);
    w.bPaymentId = await settledBy(w.b, w.bPayTo, 2);
  });
  afterAll(async () => {
    await facilitator?.close();
    // B's key on the operator routes was counted against 127.0.0.1 for a minute: none must lock out the next spec file.
    const redis = new Redis(facilitator.config.redisUrl);
    const counted = await redis.keys(`${facilitator.config.queuePrefix}:authfail:*`);
    if (counted.length) await redis.del(...counted);
    redis.disconnect();
  });

  it('has a case for every operation the OpenAPI document lists for the facilitator, and none for an undocumented one', () => {
    expect(facilitatorOperations.length).toBeGreaterThan(10);
    expect(Object.keys(cases).sort()).toEqual(facilitatorOperations);
  });

  const tenantCases = Object.entries(cases).flatMap(([route, c]) => (c.kind === 'tenant' ? [{ route, check: c.check }] : []));
  it.each(tenantCases)("$route: refused, or B's data only; A's unchanged", async ({ check }) => {
    await check(w);
  });

  it("the operator operations refuse B's key on A, change nothing of A's, and are served with the operator token", async () => {
    const operatorRoutes = Object.entries(cases).flatMap(([route, c]) => (c.kind === 'operator' ? [route] : []));
    expect(operatorRoutes.length).toBeGreaterThan(5);
    const keys = () => w.db.apiKey.findMany({ where: { merchantId: w.a.merchantId }, select: { id: true, revokedAt: true } });
    const aBefore = await w.db.merchant.findUniqueOrThrow({ where: { id: w.a.merchantId } });
    const aKeysBefore = await keys();
    const [delivery] = await w.db.$queryRawUnsafe<{ id: string }[]>(`SELECT gen_random_uuid()::text AS id`);
    const pathOf = (route: string) =>
      route
        .split(' ')[1]
        .replace('{merchantId}', w.a.merchantId)
        .replace('{keyId}', w.a.keyId)
        .replace('{deliveryId}', delivery.id)
        .replace('{network}', manifest.network)
        .replace('{address}', w.aPayTo);
    for (const route of operatorRoutes) {
      const method = route.split(' ')[0];
      const body =
        method === 'GET'
          ? undefined
          : route === 'POST /admin/merchants'
            ? { name: 'Made by B' }
            : route.endsWith('/webhook')
              ? { webhookUrl: 'https://b.example/hooks' }
              : {};
      const refused = await call(`${w.url}${pathOf(route)}`, { method, key: w.b.apiKey, body });
      expect(refused, route).toMatchObject({ status: 401, body: { code: 'unauthorized', instance: pathOf(route) } });
      // nothing of A beyond the path B asked for
      expectNoTraceOfA(w, { ...refused, body: { ...refused.body, instance: undefined } }, route);
    }
    expect(await w.db.merchant.findUniqueOrThrow({ where: { id: w.a.merchantId } })).toEqual(aBefore);
    expect(await keys()).toEqual(aKeysBefore);
    expect(await w.db.merchant.count({ where: { name: 'Made by B' } })).toBe(0);
    // The routes are there: the operator's token reads A.
    for (const route of operatorRoutes.filter((r) => r.startsWith('GET '))) {
      expect((await call(`${w.url}${pathOf(route)}`, { key: TEST_OPERATOR_TOKEN })).status, route).toBe(200);
    }
  });

  it("the public operations answer B as anyone, with nothing of A's", async () => {
    for (const [route, c] of Object.entries(cases)) {
      if (c.kind !== 'public') continue;
      const [method, p] = route.split(' ');
      const answer = await call(`${w.url}${p}`, { method, key: w.b.apiKey, ...(method === 'POST' ? { body: {} } : {}) });
      if (route === 'POST /stripe/webhooks') expect(answer.status, route).toBeGreaterThanOrEqual(400);
      else expect(answer.status, `${route} (${c.why})`).toBe(200);
      expectNoTraceOfA(w, answer, route);
    }
  });
});
