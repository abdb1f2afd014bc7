import { getAddress, type Address } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { Mppx, evm } from 'mppx/client';
import { Receipt as MppxReceipt } from 'mppx';
import { PrismaService } from '@mp/db';
import { challengeExpiry, decodeReceipt, issueChallenges, parseCredential, serializeChallenge, serializeCredential } from '@mp/mpp';
import { balanceOf, payerAccount, testChain } from '../../../test/support/chain';
import { paymentRequiredResponse } from '../../../test/support/mpp';
import { postJson, startFacilitator, type RunningFacilitator } from '../../../test/support/facilitator';
import { merchantsCli } from '../../../test/support/merchants';
import { Clock } from '../src/x402/clock';

describe('MPP method evm (charge) through the facilitator, credentials made by the official mppx client', () => {
  const { manifest, client } = testChain();
  const usdc = manifest.tokens.usdc;
  const merchant = getAddress(manifest.accounts.merchant.address) as Address;
  let facilitator: RunningFacilitator;
  let db: PrismaService;

  const terms = (amount = '25000', extra: Record<string, unknown> = {}) => ({
    realm: 'shop.example',
    offers: [
      { method: 'evm', intent: 'charge', request: { amount, currency: usdc.address, recipient: merchant, methodDetails: { chainId: manifest.chainId } } },
    ],
    ...extra,
  });

  /** A 402 as the merchant would send it, from the facilitator's challenges. */
  const challengeResponse = async (routeTerms: object) => {
    const issued = await postJson(`${facilitator.url}/mpp/challenges`, routeTerms);
    expect(issued.status).toBe(201);
    return { issued: issued.body, response: paymentRequiredResponse(issued.body.wwwAuthenticate) };
  };

  const payWith = (payerIndex: number) =>
    Mppx.create({
      methods: [evm.charge({ account: payerAccount(manifest, payerIndex), authorization: { name: usdc.name, version: usdc.version } })],
      polyfill: false,
    });

  beforeAll(async () => {
    // API_KEY_CACHE_MS 0: a rotated MPP secret is read at once.
    facilitator = await startFacilitator({ API_KEY_CACHE_MS: '0' });
    db = facilitator.app.get(PrismaService);
  });
  afterAll(() => facilitator?.close());

  it('issues challenges whose WWW-Authenticate mppx parses, with the request made canonical', async () => {
    const { issued } = await challengeResponse(terms());
    expect(issued.challenges).toHaveLength(1);
    const [challenge] = issued.challenges;
    expect(challenge).toMatchObject({
      realm: 'shop.example',
      method: 'evm',
      intent: 'charge',
      request: {
        amount: '25000',
        currency: getAddress(usdc.address),
        recipient: merchant,
        methodDetails: { chainId: manifest.chainId, credentialTypes: ['authorization'], decimals: usdc.decimals },
      },
    });
    expect(challenge.id).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(Date.parse(challenge.expires) - Date.now()).toBeGreaterThan(250_000);
  });

  it('does not offer the subscription intent without SUBSCRIPTION_SEALING_KEYS, and says why', async () => {
    const subscription = {
      realm: 'shop.example',
      offers: [
        {
          method: 'evm',
          intent: 'subscription',
          request: {
            amount: '1000',
            currency: usdc.address,
            periodUnit: 'month',
            periodCount: '1',
            recipient: merchant,
            subscriptionExpires: new Date(Date.now() + 90 * 86_400_000).toISOString(),
            methodDetails: { chainId: manifest.chainId },
          },
        },
      ],
    };
    const refused = await postJson(`${facilitator.url}/mpp/challenges`, subscription);
    expect(refused.status).toBe(400);
    expect(refused.body.code).toBe('validation_failed');
    expect(refused.body.detail).toContain('SUBSCRIPTION_SEALING_KEYS');
    const supported = await fetch(`${facilitator.url}/mpp/supported`).then((r) => r.json() as Promise<any>);
    expect(JSON.stringify(supported)).not.toContain('subscription');
  });

  it('settles the mppx credential on chain and returns a Payment-Receipt mppx reads', async () => {
    const payer = payerAccount(manifest, 3);
    const { response } = await challengeResponse(terms());
    const credential = await payWith(3).createCredential(response);
    const before = await balanceOf(client, usdc, merchant);

    const settled = await fetch(`${facilitator.url}/mpp/settle`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ credential, terms: terms() }),
    });
    const body = (await settled.json()) as any;
    expect(settled.status).toBe(200);
    expect(body).toMatchObject({
      success: true,
      payer: payer.address,
      receipt: { status: 'success', method: 'evm', reference: expect.stringMatching(/^0x[0-9a-f]{64}$/) },
    });
    const header = settled.headers.get('payment-receipt')!;
    expect(settled.headers.get('cache-control')).toBe('private');
    expect(MppxReceipt.deserialize(header)).toMatchObject({ status: 'success', method: 'evm', reference: body.receipt.reference });
    expect(decodeReceipt(header)).toEqual({ ok: true, value: body.receipt });

    expect(await balanceOf(client, usdc, merchant)).toBe(before + 25_000n);
    const receipt = await client.getTransactionReceipt({ hash: body.receipt.reference });
    expect(receipt.status).toBe('success');
    const [row] = await db.$queryRawUnsafe<{ state: string; protocol: string; scheme: string; challenge_id: string; x402_version: number | null }[]>(
      `SELECT state::text, protocol, scheme, challenge_id, x402_version FROM facilitator.payments WHERE tx_hash = $1`,
      body.receipt.reference,
    );
    expect(row).toEqual({ state: 'confirmed', protocol: 'mpp', scheme: 'evm', challenge_id: body.receipt.challengeId, x402_version: null });

    // The same credential again: the same receipt (header and all), and nothing moves.
    const replay = await postJson(`${facilitator.url}/mpp/settle`, { credential, terms: terms() });
    expect(replay.status).toBe(200);
    expect(replay.body).toEqual(body);
    expect(await balanceOf(client, usdc, merchant)).toBe(before + 25_000n);
  });

  it('settles one credential presented 8 times at once exactly once, and answers all 8 with its receipt', async () => {
    const { response } = await challengeResponse(terms('31000'));
    const credential = await payWith(4).createCredential(response);
    const before = await balanceOf(client, usdc, merchant);
    const answers = await Promise.all(Array.from({ length: 8 }, () => postJson(`${facilitator.url}/mpp/settle`, { credential, terms: terms('31000') })));
    expect(answers.map((a) => a.status)).toEqual(Array(8).fill(200));
    expect(new Set(answers.map((a) => a.body.paymentReceipt)).size).toBe(1);
    expect(await balanceOf(client, usdc, merchant)).toBe(before + 31_000n);
    const transactions = await db.$queryRawUnsafe<{ hash: string }[]>(
      `SELECT t.hash FROM facilitator.payment_transactions t JOIN facilitator.payments p ON p.id = t.payment_id WHERE p.challenge_id = $1`,
      answers[0]!.body.receipt.challengeId,
    );
    expect(transactions.map((t) => t.hash)).toEqual([answers[0]!.body.receipt.reference]);
  });

  it('answers the same credential from the payment record when its claim was left unfinished (a crash), also after expiry; another payload for the challenge is refused', async () => {
    const { response } = await challengeResponse(terms('33000', { expiresIn: 30 }));
    const credential = await payWith(9).createCredential(response);
    const before = await balanceOf(client, usdc, merchant);
    const first = await postJson(`${facilitator.url}/mpp/settle`, { credential, terms: terms('33000', { expiresIn: 30 }) });
    expect(first.status).toBe(200);
    const { challengeId, reference } = first.body.receipt;
    // As a process killed after the payment confirmed but before its claim was marked leaves it.
    const leaveUnfinished = () =>
      db.$executeRawUnsafe(
        `UPDATE facilitator.mpp_claims SET state = 'retryable', receipt = NULL, payer = NULL, reference = NULL WHERE challenge_id = $1`,
        challengeId,
      );
    const transactionsOf = () =>
      db.$queryRawUnsafe<{ hash: string }[]>(
        `SELECT t.hash FROM facilitator.payment_transactions t JOIN facilitator.payments p ON p.id = t.payment_id WHERE p.challenge_id = $1`,
        challengeId,
      );

    await leaveUnfinished();
    const driven = await postJson(`${facilitator.url}/mpp/settle`, { credential, terms: terms('33000', { expiresIn: 30 }) });
    expect(driven).toMatchObject({ status: 200, body: { receipt: { reference, challengeId } } });

    await leaveUnfinished();
    const clock = facilitator.app.get(Clock);
    const real = clock.nowMs.bind(clock);
    clock.nowMs = () => real() + 120_000;
    try {
      const afterExpiry = await postJson(`${facilitator.url}/mpp/settle`, { credential, terms: terms('33000', { expiresIn: 30 }) });
      expect(afterExpiry).toMatchObject({ status: 200, body: { receipt: { status: 'success', method: 'evm', reference, challengeId } } });
      // From now on the same receipt every time.
      expect((await postJson(`${facilitator.url}/mpp/settle`, { credential, terms: terms('33000', { expiresIn: 30 }) })).body).toEqual(afterExpiry.body);
    } finally {
      clock.nowMs = real;
    }

    // Another payer's payload for the same challenge: refused, and nothing moves.
    const other = await payWith(8).createCredential(response);
    expect(other).not.toBe(credential);
    const refused = await postJson(`${facilitator.url}/mpp/settle`, { credential: other, terms: terms('33000', { expiresIn: 30 }) });
    expect(refused).toMatchObject({ status: 402, body: { type: 'https://paymentauth.org/problems/invalid-challenge', challengeId } });
    expect((await transactionsOf()).map((t) => t.hash)).toEqual([reference]);
    expect(await balanceOf(client, usdc, merchant)).toBe(before + 33_000n);
  });

  it('refuses a payer without the funds after its challenge is claimed (the simulation runs beside the claim): the same problem again, nothing moved', async () => {
    const broke = Mppx.create({
      methods: [evm.charge({ account: privateKeyToAccount(generatePrivateKey()), authorization: { name: usdc.name, version: usdc.version } })],
      polyfill: false,
    });
    const { response } = await challengeResponse(terms());
    const credential = await broke.createCredential(response);
    const before = await balanceOf(client, usdc, merchant);
    const refused = await postJson(`${facilitator.url}/mpp/settle`, { credential, terms: terms() });
    expect({ status: refused.status, type: refused.body.type, detail: refused.body.detail }).toEqual({
      status: 402,
      type: 'https://paymentauth.org/problems/verification-failed',
      detail: expect.stringContaining('(invalid_exact_evm_insufficient_balance)'),
    });
    const parsed = parseCredential(credential);
    if (!parsed.ok) throw new Error('mppx credential did not parse');
    const challengeId = parsed.value.challenge.id;
    const [claim] = await db.$queryRawUnsafe<{ state: string }[]>(`SELECT state FROM facilitator.mpp_claims WHERE challenge_id = $1`, challengeId);
    expect(claim).toEqual({ state: 'failed' });
    const again = await postJson(`${facilitator.url}/mpp/settle`, { credential, terms: terms() });
    expect({ status: again.status, type: again.body.type, detail: again.body.detail }).toEqual({
      status: 402,
      type: refused.body.type,
      detail: refused.body.detail,
    });
    const payments = await db.$queryRawUnsafe<unknown[]>(`SELECT 1 FROM facilitator.payments WHERE challenge_id = $1`, challengeId);
    expect(payments).toEqual([]);
    expect(await balanceOf(client, usdc, merchant)).toBe(before);
  });

  it('refuses a challenge issued for cheaper terms (cross-route), and settles nothing', async () => {
    const { response } = await challengeResponse(terms('1000'));
    const credential = await payWith(5).createCredential(response);
    const answer = await postJson(`${facilitator.url}/mpp/settle`, { credential, terms: terms('90000') });
    expect(answer.status).toBe(402);
    expect(answer.body.type).toBe('https://paymentauth.org/problems/invalid-challenge');
    expect(answer.body.challenges[0].request.amount).toBe('90000');
  });

  it('answers each problem type the spec names, with fresh challenges on 402s', async () => {
    const { response, issued } = await challengeResponse(terms());
    const good = await payWith(6).createCredential(response);
    const parsed = parseCredential(good);
    if (!parsed.ok) throw new Error('mppx credential did not parse');
    const tampered = serializeCredential({
      ...parsed.value,
      challenge: { ...parsed.value.challenge, request: { ...parsed.value.challenge.request, amount: '1' } },
    });
    const expired = serializeCredential({ ...parsed.value, challenge: { ...parsed.value.challenge, expires: '2020-01-01T00:00:00Z' } });
    const wrongPayload = serializeCredential({ ...parsed.value, payload: { ...(parsed.value.payload as object), value: '1' } });
    const badSignature = serializeCredential({ ...parsed.value, payload: { ...(parsed.value.payload as object), signature: `0x${'11'.repeat(65)}` } });
    const { signature: _signature, ...unsigned } = parsed.value.payload as Record<string, unknown>;
    const missingSignature = serializeCredential({ ...parsed.value, payload: unsigned });
    const unknownMethod = serializeCredential({ ...parsed.value, challenge: { ...parsed.value.challenge, method: 'tempo' } });

    const cases: [string, string, number][] = [
      [tampered, 'invalid-challenge', 402],
      [expired, 'invalid-challenge', 402], // the expiry is bound too: changing it breaks the HMAC first
      [wrongPayload, 'payment-insufficient', 402],
      [badSignature, 'verification-failed', 402],
      [missingSignature, 'invalid-payload', 402],
      [unknownMethod, 'invalid-challenge', 402],
      ['Payment !!!not-base64!!!', 'malformed-credential', 402],
      [`Payment ${Buffer.from('{"challenge":1}').toString('base64url')}`, 'malformed-credential', 402],
      [`${good}, ${good}`, 'bad-request', 400],
    ];
    for (const [credential, type, status] of cases) {
      const answer = await postJson(`${facilitator.url}/mpp/settle`, { credential, terms: terms() });
      expect({ type: answer.body.type, status: answer.status, detail: answer.body.detail }).toEqual({
        type: `https://paymentauth.org/problems/${type}`,
        status,
        detail: expect.any(String),
      });
      expect(answer.contentType).toMatch(/^application\/problem\+json/);
      expect(answer.body.challenges?.length).toBe(1);
    }
    // Every issuance is a new challenge, even for the same terms within the same second.
    expect((await challengeResponse(terms())).issued.challenges[0].id).not.toBe(issued.challenges[0].id);
    // Expired for real: answered after the challenge's expiry (the facilitator's clock moved on).
    const clock = facilitator.app.get(Clock);
    const real = clock.nowMs.bind(clock);
    clock.nowMs = () => real() + 301_000;
    try {
      const late = await postJson(`${facilitator.url}/mpp/settle`, { credential: good, terms: terms() });
      expect({ type: late.body.type, status: late.status }).toEqual({ type: 'https://paymentauth.org/problems/payment-expired', status: 402 });
    } finally {
      clock.nowMs = real;
    }

    // None of it moved money or used up the good challenge: it still settles.
    const settled = await postJson(`${facilitator.url}/mpp/settle`, { credential: good, terms: terms() });
    expect(settled.status).toBe(200);
  });

  it("binds challenges with a secret per merchant (or its issuer key, /mpp/issuance): another merchant's key cannot settle them, and a rotation keeps old challenges valid", async () => {
    // the merchants CLI, through this facilitator's operator API
    const cli = async (...args: string[]) => {
      const r = await merchantsCli(facilitator.url, ...args, '--json');
      expect(r.code, r.stderr).toBe(0);
      return JSON.parse(r.stdout);
    };
    const a = await cli('create', '--name', 'MPP merchant A', '--receiving-address', `${manifest.network}:${merchant}`);
    const b = await cli('create', '--name', 'MPP merchant B', '--receiving-address', `${manifest.network}:${merchant}`);
    const as = (key: string) => (url: string, body: unknown) =>
      fetch(`${facilitator.url}${url}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify(body),
      }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));
    const asA = as(a.apiKey);
    const asB = as(b.apiKey);

    const issued = await asA('/mpp/challenges', terms('12000'));
    const credential = await payWith(5).createCredential(paymentRequiredResponse(issued.body.wwwAuthenticate));

    // B's secret did not issue it, and open mode's neither.
    expect((await asB('/mpp/settle', { credential, terms: terms('12000') })).body.type).toBe('https://paymentauth.org/problems/invalid-challenge');
    expect((await postJson(`${facilitator.url}/mpp/verify`, { credential, terms: terms('12000') })).body.type).toBe(
      'https://paymentauth.org/problems/invalid-challenge',
    );

    // A's own issuance (its issuer key): its challenges settle for A only, as the facilitator's do.
    const issuance = await asA('/mpp/issuance', terms('12000'));
    expect(issuance.status).toBe(200);
    expect(issuance.body).toEqual({
      issuerKey: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      realm: 'shop.example',
      offers: issued.body.challenges.map((c: { method: string; intent: string; request: unknown }) => ({
        method: c.method,
        intent: c.intent,
        request: c.request,
      })),
      challengeTtlSeconds: expect.any(Number),
    });
    const issuedByA = (key: string) =>
      issueChallenges(key, { realm: issuance.body.realm, offers: issuance.body.offers }, { expires: challengeExpiry(Date.now(), 60) });
    const ownCredential = await payWith(4).createCredential(paymentRequiredResponse(issuedByA(issuance.body.issuerKey).map(serializeChallenge)));
    expect((await asB('/mpp/settle', { credential: ownCredential, terms: terms('12000') })).body.type).toBe(
      'https://paymentauth.org/problems/invalid-challenge',
    );
    const forged = await payWith(4).createCredential(paymentRequiredResponse(issuedByA(`${issuance.body.issuerKey}x`).map(serializeChallenge)));
    expect((await asA('/mpp/settle', { credential: forged, terms: terms('12000') })).body.type).toBe('https://paymentauth.org/problems/invalid-challenge');

    await cli('rotate-mpp-secret', a.merchantId);
    const fresh = await asA('/mpp/challenges', terms('12000'));
    expect(fresh.body.challenges[0].id).not.toBe(issued.body.challenges[0].id);
    expect((await asA('/mpp/issuance', terms('12000'))).body.issuerKey).not.toBe(issuance.body.issuerKey);
    const settled = await asA('/mpp/settle', { credential, terms: terms('12000') });
    expect(settled.status).toBe(200);
    // Issued with the key before the rotation: accepted, as the previous secret's challenges are.
    const ownSettled = await asA('/mpp/settle', { credential: ownCredential, terms: terms('12000') });
    expect(ownSettled.status).toBe(200);
    const own = parseCredential(ownCredential);
    if (!own.ok) throw new Error('mppx credential did not parse');
    expect(ownSettled.body.receipt.challengeId).toBe(own.value.challenge.id);
    const [payment] = await db.$queryRawUnsafe<{ merchant_id: string }[]>(
      `SELECT merchant_id::text FROM facilitator.payments WHERE challenge_id = $1`,
      settled.body.receipt.challengeId,
    );
    expect(payment?.merchant_id).toBe(a.merchantId);
  });
});
