import { randomBytes } from 'node:crypto';
import { Queue, QueueEvents, Worker } from 'bullmq';
import Redis from 'ioredis';
import { Challenge as MppxChallenge, Credential as MppxCredential, Receipt as MppxReceipt } from 'mppx';
import { decodeFunctionData, getAddress, parseSignature, type Address, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import {
  PAYMENT_EVENTS_QUEUE,
  paymentEventDataSchemas,
  paymentEventsOfJob,
  SUBSCRIPTION_COMMANDS_QUEUE,
  subscriptionCommandJobId,
  CHARGE_BATCH_JOB_NAME,
  chargeBatchJobId,
  chargeCommandId,
  type PaymentEventJobData,
  type PaymentEventMessage,
  type SubscriptionCommand,
} from '@mp/clients';
import { eip3009Abi, MULTICALL3_ADDRESS, multicall3Abi, type ChainManifest, type ManifestToken } from '@mp/chain';
import { PrismaService } from '@mp/db';
import { decodeReceipt, evmSubscriptionNonce, signEvmSubscription, type EvmSubscriptionPayload } from '@mp/mpp';
import { balanceOf, mineBlock, payerAccount, withAutomineOff } from '../../../test/support/chain';
import { startFacilitator, type RunningFacilitator } from '../../../test/support/facilitator';
import { merchantsCli } from '../../../test/support/merchants';
import { startOwnChain, type OwnChain } from '../../../test/support/own-chain';
import { ChainPayments } from '../src/settlement/chain-payments.repository';
import { batchJobId, SETTLEMENT_QUEUE, SettlementQueue } from '../src/settlement/settlement.queue';
import { SettlementWorker } from '../src/settlement/settlement.worker';
import { Clock } from '../src/x402/clock';
import { AuthorizationVault } from '../src/subscriptions/authorization-vault';
import { RevocationWatcher } from '../src/subscriptions/revocation-watcher';
import { SubscriptionCommandsService, WindowOpensSoonError } from '../src/subscriptions/subscription-commands.service';

// The official mppx client has no evm subscription (mppx 0.11: charge and session only, and tempo's subscription):
// here it parses our challenge header and builds the credential envelope around our payload; the payload (one signed
// authorization per period) comes from @mp/mpp's signEvmSubscription.

const DAY = 86_400;
const keyMaterial = () => randomBytes(32).toString('base64');
const k1 = `k1:${keyMaterial()}`;

describe('MPP evm subscription (EXPERIMENTAL profile) on its own chain, whose clock the spec moves', () => {
  let chain: OwnChain;
  let manifest: ChainManifest;
  let usdc: ManifestToken;
  let recipient: Address;
  let facilitator: RunningFacilitator;
  let db: PrismaService;
  let redis: Redis;
  let events: Worker<PaymentEventJobData>;
  const received: PaymentEventMessage[] = [];
  let merchant: { merchantId: string; apiKey: string };

  const until = async <T>(what: string, probe: () => Promise<T | undefined> | T | undefined, timeoutMs = 20_000): Promise<T> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await probe();
      if (value !== undefined) return value;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };

  /** subscriptionExpires of the terms: three and a half days of the chain's time ahead, so four daily periods. */
  let expires: string;

  /** The facilitator's clock follows the chain's (which the spec moves forward). */
  const syncClock = async () => {
    const chainNow = await chain.now();
    const offset = chainNow * 1000 - Date.now();
    facilitator.app.get(Clock, { strict: false }).nowMs = () => Date.now() + offset;
    expires = new Date((chainNow + 3.5 * DAY) * 1000).toISOString().replace('.000Z', 'Z');
  };

  const terms = (amount = '50000', extra: Record<string, unknown> = {}, request: Record<string, unknown> = {}) => ({
    realm: 'news.example',
    offers: [
      {
        method: 'evm',
        intent: 'subscription',
        request: {
          amount,
          currency: usdc.address,
          periodUnit: 'day',
          periodCount: '1',
          recipient,
          subscriptionExpires: expires,
          methodDetails: { chainId: manifest.chainId },
          ...request,
        },
      },
    ],
    ...extra,
  });

  const as = (url: string, body: unknown) =>
    fetch(`${facilitator.url}${url}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${merchant.apiKey}` },
      body: JSON.stringify(body),
    }).then(async (r) => ({ status: r.status, headers: r.headers, body: (await r.json()) as any }));

  /** A challenge as mppx reads it from the 402's header, and a credential envelope mppx builds around our payload. */
  const subscribe = async (
    routeTerms: ReturnType<typeof terms>,
    payer: PrivateKeyAccount,
    change: (payload: EvmSubscriptionPayload) => void = () => undefined,
    anchorSeconds?: bigint,
  ) => {
    const issued = await as('/mpp/challenges', routeTerms);
    expect(issued.status).toBe(201);
    const challenge = MppxChallenge.deserialize(issued.body.wwwAuthenticate[0]);
    const payload = await signEvmSubscription(challenge as never, {
      from: payer.address,
      signTypedData: (typed) => payer.signTypedData(typed as never),
      // the payer's "now", as the facilitator's clock (which follows the chain) tells it
      anchorSeconds: anchorSeconds ?? facilitator.app.get(Clock, { strict: false }).nowSeconds() - 2n,
    });
    change(payload);
    const credential = MppxCredential.serialize(
      MppxCredential.from({ challenge, payload, source: `did:pkh:eip155:${manifest.chainId}:${getAddress(payer.address)}` }),
    );
    return { challenge, payload, credential };
  };

  const counts = async () => {
    const [row] = await db.$queryRawUnsafe<{ subscriptions: number; payments: number; authorizations: number }[]>(
      `SELECT (SELECT count(*)::int FROM facilitator.subscriptions) AS subscriptions,
              (SELECT count(*)::int FROM facilitator.payments WHERE network = $1) AS payments,
              (SELECT count(*)::int FROM facilitator.subscription_authorizations) AS authorizations`,
      manifest.network,
    );
    return row!;
  };

  const eventsOf = (subscriptionId: string, type: string, count = 1) =>
    until(`${count} ${type} of ${subscriptionId}`, () => {
      const found = received.filter(
        (m) => m.type === type && ((m.data as any).subscriptionId === subscriptionId || m.payment.subscription?.id === subscriptionId),
      );
      return found.length >= count ? found : undefined;
    });

  const command = (c: Partial<SubscriptionCommand> & Pick<SubscriptionCommand, 'type' | 'subscriptionId'>): SubscriptionCommand =>
    ({ merchantId: merchant.merchantId, requestedAt: new Date().toISOString(), ...c }) as SubscriptionCommand;

  const charge = (subscriptionId: string, periodIndex: number, attempt = 0) =>
    command({
      type: 'charge',
      subscriptionId,
      commandId: chargeCommandId(subscriptionId, periodIndex, attempt),
      periodIndex,
      attempt,
      periodStart: new Date().toISOString(),
      periodEnd: new Date().toISOString(),
    });

  /** The payer withdraws one authorization on chain (EIP-3009 cancelAuthorization), as a wallet would; the mined transaction's hash. */
  const cancelOnChain = async (account: PrivateKeyAccount, nonce: Hex) => {
    const signature = await account.signTypedData({
      domain: { name: usdc.name, version: usdc.version, chainId: manifest.chainId, verifyingContract: usdc.address as Address },
      types: {
        CancelAuthorization: [
          { name: 'authorizer', type: 'address' },
          { name: 'nonce', type: 'bytes32' },
        ],
      },
      primaryType: 'CancelAuthorization',
      message: { authorizer: account.address, nonce },
    });
    const { createWalletClient, http } = await import('viem');
    const wallet = createWalletClient({ account, chain: chain.client.chain, transport: http(manifest.rpcUrl) });
    const hash = await wallet.writeContract({
      address: usdc.address as Address,
      abi: eip3009Abi,
      functionName: 'cancelAuthorization',
      args: [account.address, nonce, signature],
    } as never);
    await chain.client.waitForTransactionReceipt({ hash });
    return hash;
  };

  beforeAll(async () => {
    chain = await startOwnChain(31_338);
    manifest = chain.manifest;
    usdc = manifest.tokens.usdc;
    recipient = getAddress(manifest.accounts.merchant.address) as Address;
    facilitator = await startFacilitator({
      CHAIN_MANIFEST: chain.manifestPath,
      SUBSCRIPTION_SEALING_KEYS: k1,
      OUTBOX_POLL_MS: '20',
      REVOCATION_POLL_MS: '600000',
      // renewals due together share Multicall3 transactions
      SETTLE_BATCH_MAX: '10',
      SETTLE_BATCH_WINDOW_MS: '200',
      API_KEY_CACHE_MS: '0',
    });
    db = facilitator.app.get(PrismaService);
    redis = new Redis(facilitator.config.redisUrl, { maxRetriesPerRequest: null });
    events = new Worker<PaymentEventJobData>(PAYMENT_EVENTS_QUEUE, async (job) => void received.push(...(paymentEventsOfJob(job) as PaymentEventMessage[])), {
      connection: redis,
      prefix: facilitator.config.queuePrefix,
    });
    const created = await merchantsCli(
      facilitator.url,
      'create',
      '--name',
      'Subscriptions merchant',
      '--receiving-address',
      `${manifest.network}:${recipient}`,
      '--json',
    );
    expect(created.code, created.stderr).toBe(0);
    merchant = JSON.parse(created.stdout);
    await syncClock();
  });

  afterAll(async () => {
    // nothing of this chain may be left in flight for the next spec's workers (they do not serve this chain)
    await until('no payment of this chain in flight', async () => {
      const [row] = await db.$queryRawUnsafe<{ n: number }[]>(
        `SELECT count(*)::int AS n FROM facilitator.payments WHERE network = $1 AND state IN ('verified', 'submitted')`,
        manifest.network,
      );
      return row!.n === 0 || undefined;
    }).catch(() => undefined);
    await events?.close();
    redis?.disconnect();
    await facilitator?.close();
    await chain?.stop();
  });

  let subscriptionId: string;
  let firstPayload: EvmSubscriptionPayload;
  let firstCredential: string;
  let firstAnswer: any;
  let firstTerms: ReturnType<typeof terms>;
  const payer = () => payerAccount(manifest, 2);

  it('activates: 200 with a receipt carrying subscriptionId, period 0 settled on chain, subscription.activated then the payment events with payment.subscription', async () => {
    const before = await balanceOf(chain.client, usdc, recipient);
    firstTerms = terms('50000', { opaque: { plan: '7d3c9a4e-1f2b-4c5d-8e9f-0a1b2c3d4e5f' } });
    const { credential, payload, challenge } = await subscribe(firstTerms, payer());
    expect(payload.authorizations).toHaveLength(4);
    const settled = await as('/mpp/settle', { credential, terms: firstTerms });
    expect(settled.status, JSON.stringify(settled.body)).toBe(200);
    expect(settled.body.receipt).toMatchObject({
      status: 'success',
      method: 'evm',
      reference: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      subscriptionId: expect.stringMatching(/^[A-Za-z0-9_-]{22}$/),
      challengeId: challenge.id,
    });
    const header = settled.headers.get('payment-receipt')!;
    expect(MppxReceipt.deserialize(header)).toMatchObject({ method: 'evm', reference: settled.body.receipt.reference });
    expect(decodeReceipt(header)).toEqual({ ok: true, value: settled.body.receipt });
    subscriptionId = settled.body.receipt.subscriptionId;
    firstPayload = payload;
    firstCredential = credential;
    firstAnswer = settled.body;

    expect(await balanceOf(chain.client, usdc, recipient)).toBe(before + 50_000n);
    const activated = await eventsOf(subscriptionId, 'subscription.activated');
    expect(paymentEventDataSchemas['subscription.activated'].parse(activated[0]!.data)).toEqual({
      subscriptionId,
      method: 'evm',
      planId: '7d3c9a4e-1f2b-4c5d-8e9f-0a1b2c3d4e5f',
      payer: payer().address.toLowerCase(),
      payTo: recipient.toLowerCase(),
      network: manifest.network,
      asset: usdc.address.toLowerCase(),
      amount: '50000',
      periodUnit: 'day',
      periodCount: 1,
      anchor: new Date((Number(payload.authorizations[0]!.validAfter) + 1) * 1000).toISOString(),
      expiresAt: expect.any(String),
      authorizedPeriods: 4,
      challengeId: challenge.id,
    });
    const confirmed = await eventsOf(subscriptionId, 'payment.confirmed');
    expect(confirmed[0]!.payment).toMatchObject({
      state: 'confirmed',
      txHash: settled.body.receipt.reference,
      subscription: { id: subscriptionId, periodIndex: 0, attempt: 0 },
    });
    const ofPayment = received.filter((m) => m.paymentId === activated[0]!.paymentId).map((m) => m.type);
    expect(ofPayment.slice(0, 2)).toEqual(['subscription.activated', 'payment.verified']);
  });

  it('answers the same credential again with the same receipt and never makes a second subscription', async () => {
    const before = await counts();
    const again = await Promise.all([1, 2, 3].map(() => as('/mpp/settle', { credential: firstCredential, terms: firstTerms })));
    for (const answer of again) {
      expect(answer.status).toBe(200);
      expect(answer.body).toEqual(firstAnswer);
    }
    expect(await counts()).toEqual(before);

    // As a process killed after period 0 confirmed but before its claim was marked leaves it; sent again after the
    // challenge expired, the receipt is rebuilt from the payment's record, subscriptionId included.
    await db.$executeRawUnsafe(
      `UPDATE facilitator.mpp_claims SET state = 'retryable', receipt = NULL, payer = NULL, reference = NULL WHERE challenge_id = $1`,
      firstAnswer.receipt.challengeId,
    );
    await chain.increaseTime(301);
    await syncClock();
    const rebuilt = await as('/mpp/settle', { credential: firstCredential, terms: firstTerms });
    expect(rebuilt.status, JSON.stringify(rebuilt.body)).toBe(200);
    expect(rebuilt.body.receipt).toMatchObject({ subscriptionId, reference: firstAnswer.receipt.reference, challengeId: firstAnswer.receipt.challengeId });
    expect(await counts()).toEqual(before);
  });

  it.each([
    [
      'a signature that is not the payer’s',
      (p: EvmSubscriptionPayload) => (p.authorizations[2]!.signature = p.authorizations[1]!.signature),
      'verification-failed',
      'signature',
    ],
    ['a wrong value', (p: EvmSubscriptionPayload) => (p.authorizations[1]!.value = '40000'), 'payment-insufficient', 'authorizations[1]'],
    ['a wrong recipient', (p: EvmSubscriptionPayload) => (p.authorizations[3]!.to = p.from), 'verification-failed', 'pays'],
  ])('refuses %s with a 402 problem and fresh challenges, and stores nothing', async (_name, change, code, detail) => {
    const before = await counts();
    const routeTerms = terms();
    const { credential } = await subscribe(routeTerms, payerAccount(manifest, 3), change);
    const answer = await as('/mpp/settle', { credential, terms: routeTerms });
    expect(answer.status).toBe(402);
    expect(answer.body.type).toBe(`https://paymentauth.org/problems/${code}`);
    expect(answer.body.detail).toContain(detail);
    expect(answer.headers.get('www-authenticate')).toContain('intent="subscription"');
    expect(await counts()).toEqual(before);
  });

  it('POST /mpp/verify checks every authorization without storing anything', async () => {
    const before = await counts();
    const routeTerms = terms();
    const good = await subscribe(routeTerms, payerAccount(manifest, 3));
    const verified = await as('/mpp/verify', { credential: good.credential, terms: routeTerms });
    expect(verified.status, JSON.stringify(verified.body)).toBe(200);
    expect(verified.body).toMatchObject({ valid: true, method: 'evm', intent: 'subscription', payer: getAddress(payerAccount(manifest, 3).address) });
    const bad = await subscribe(routeTerms, payerAccount(manifest, 3), (p) => (p.authorizations[3]!.signature = p.authorizations[0]!.signature));
    const refused = await as('/mpp/verify', { credential: bad.credential, terms: routeTerms });
    expect(refused.status).toBe(402);
    expect(refused.body.detail).toContain('authorizations[3]');
    expect(await counts()).toEqual(before);
  });

  it('refuses an expired challenge with a 402 and stores nothing', async () => {
    const before = await counts();
    const expiring = terms('50000', { expiresIn: 10 });
    const { credential } = await subscribe(expiring, payerAccount(manifest, 3));
    await chain.increaseTime(11);
    await syncClock();
    const answer = await as('/mpp/settle', { credential, terms: expiring });
    expect(answer.status).toBe(402);
    expect(answer.body.type).toBe('https://paymentauth.org/problems/payment-expired');
    expect(await counts()).toEqual(before);
  });

  it('refuses terms that ask for an unrepresentable period, or carry expires in the request (400, nothing issued)', async () => {
    const bad = await as('/mpp/challenges', terms('50000', {}, { periodUnit: 'month', periodCount: '121' }));
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe('validation_failed');
    const expires = await as('/mpp/challenges', terms('50000', {}, { expires: '2030-01-01T00:00:00Z' }));
    expect(expires.status).toBe(400);
    expect(JSON.stringify(expires.body)).toContain('expiry belongs in the challenge');
  });

  it('stores the authorizations sealed: no signature of an unused period appears anywhere in the database', async () => {
    const rows = await db.$queryRawUnsafe<{ period_index: number; key_id: string; sealed: Buffer }[]>(
      `SELECT period_index, key_id, sealed FROM facilitator.subscription_authorizations WHERE subscription_id = $1 ORDER BY period_index`,
      subscriptionId,
    );
    expect(rows.map((r) => r.key_id)).toEqual(['k1', 'k1', 'k1', 'k1']);
    for (const period of [1, 2, 3]) {
      const signature = firstPayload.authorizations[period]!.signature.slice(2).toLowerCase();
      const { r, s } = parseSignature(firstPayload.authorizations[period]!.signature as Hex);
      expect(Buffer.from(rows[period]!.sealed).toString('hex')).not.toContain(r.slice(2));
      const [found] = await db.$queryRawUnsafe<{ n: number }[]>(
        `SELECT ((SELECT count(*) FROM facilitator.subscription_authorizations t WHERE encode(t.sealed, 'hex') LIKE '%' || $1 || '%' OR t::text ILIKE '%' || $1 || '%')
              + (SELECT count(*) FROM facilitator.payments t WHERE t::text ILIKE '%' || $1 || '%')
              + (SELECT count(*) FROM facilitator.payment_events t WHERE t::text ILIKE '%' || $1 || '%')
              + (SELECT count(*) FROM facilitator.mpp_claims t WHERE t::text ILIKE '%' || $1 || '%')
              + (SELECT count(*) FROM facilitator.subscriptions t WHERE t::text ILIKE '%' || $1 || '%'))::int AS n`,
        s.slice(2).toLowerCase(),
      );
      expect(found!.n, `period ${period}'s signature (${signature.slice(0, 12)}…) is stored in clear`).toBe(0);
    }
  });

  it('refuses a charge of period 1 before its window opens (window_not_open), once', async () => {
    const service = facilitator.app.get(SubscriptionCommandsService, { strict: false });
    expect(await service.run(charge(subscriptionId, 1, 0))).toBe('refused:window_not_open');
    expect(await service.run(charge(subscriptionId, 1, 0))).toBe('done');
    const refused = await eventsOf(subscriptionId, 'subscription.charge_refused');
    expect(refused[0]!.data).toMatchObject({ subscriptionId, periodIndex: 1, attempt: 0, reason: 'window_not_open' });
  });

  it("tries again, and neither refuses nor charges, a charge asked moments before its window opens (the ledger's clock a little ahead)", async () => {
    const service = facilitator.app.get(SubscriptionCommandsService, { strict: false });
    const [{ anchor }] = await db.$queryRawUnsafe<{ anchor: Date }[]>(`SELECT anchor FROM facilitator.subscriptions WHERE id = $1`, subscriptionId);
    const clock = facilitator.app.get(Clock, { strict: false });
    const followsChain = clock.nowMs;
    clock.nowMs = () => anchor.getTime() + DAY * 1000 - 30_000; // period 1 opens in 30 s here
    try {
      await expect(service.run(charge(subscriptionId, 1, 7))).rejects.toThrow(WindowOpensSoonError);
    } finally {
      clock.nowMs = followsChain;
    }
    const refused = await eventsOf(subscriptionId, 'subscription.charge_refused');
    expect(refused.filter((e) => (e.data as { attempt: number }).attempt === 7)).toEqual([]);
    const [{ n }] = await db.$queryRawUnsafe<{ n: number }[]>(
      `SELECT count(*)::int AS n FROM facilitator.payments WHERE subscription_id = $1 AND subscription_period = 1`,
      subscriptionId,
    );
    expect(n).toBe(0);
  });

  it('charges period 1 once its window is open, exactly once although the command is published twice and two workers race', async () => {
    await chain.increaseTime(DAY);
    await syncClock();
    const before = await balanceOf(chain.client, usdc, recipient);
    const queue = new Queue(SUBSCRIPTION_COMMANDS_QUEUE, { connection: redis, prefix: facilitator.config.queuePrefix });
    const renewal = charge(subscriptionId, 1, 1);
    // published twice under its job id (dropped by BullMQ), once more under another id (as after the first was removed),
    // and run by a second "worker" at the same time
    await queue.add('charge', renewal, { jobId: subscriptionCommandJobId(renewal) });
    await queue.add('charge', renewal, { jobId: subscriptionCommandJobId(renewal) });
    await queue.add('charge', renewal, { jobId: `${subscriptionCommandJobId(renewal)}-again` });
    const service = facilitator.app.get(SubscriptionCommandsService, { strict: false });
    const raced = await Promise.all([service.run(renewal), service.run(renewal)]);
    expect(raced.filter((o) => o === 'charged').length).toBeLessThanOrEqual(1);
    // the facilitator's own commands worker took both queued jobs, and carried the command out at most once too
    const outcomes = await until('both queued commands processed', async () => {
      const jobs = await Promise.all([subscriptionCommandJobId(renewal), `${subscriptionCommandJobId(renewal)}-again`].map((id) => queue.getJob(id)));
      const values = jobs.map((j) => j?.returnvalue as string | undefined);
      return values.every((v) => typeof v === 'string') ? values : undefined;
    });
    expect([...raced, ...outcomes].filter((o) => o === 'charged')).toHaveLength(1);
    expect([...raced, ...outcomes].every((o) => o === 'charged' || o === 'done')).toBe(true);
    // a command that breaks the contract fails for good, changing nothing
    const malformed = await queue.add('charge', { type: 'charge', subscriptionId, periodIndex: -1 }, { jobId: `malformed-${subscriptionId}` });
    const failed = await until('the malformed command failed', async () => ((await malformed.isFailed()) ? (await queue.getJob(malformed.id!))! : undefined));
    expect(failed.failedReason).toContain('malformed subscription command');
    expect(failed.attemptsMade).toBe(1);
    await queue.close();

    const confirmed = await until('period 1 confirmed', async () => {
      const found = received.filter(
        (m) => m.type === 'payment.confirmed' && m.payment.subscription?.id === subscriptionId && m.payment.subscription.periodIndex === 1,
      );
      return found.length ? found : undefined;
    });
    expect(confirmed[0]!.payment.subscription).toEqual({ id: subscriptionId, periodIndex: 1, attempt: 1 });
    expect(await balanceOf(chain.client, usdc, recipient)).toBe(before + 50_000n);
    const payments = await db.$queryRawUnsafe<{ n: number }[]>(
      `SELECT count(*)::int AS n FROM facilitator.payments WHERE subscription_id = $1 AND subscription_period = 1`,
      subscriptionId,
    );
    expect(payments[0]!.n).toBe(1);
    const [charged] = await db.$queryRawUnsafe<{ n: number }[]>(
      `SELECT count(*)::int AS n FROM facilitator.subscription_charges WHERE subscription_id = $1 AND period_index = 1 AND outcome = 'charged'`,
      subscriptionId,
    );
    expect(charged!.n).toBe(1);
    // a later attempt for the paid period is refused, not charged
    expect(await service.run(charge(subscriptionId, 1, 2))).toBe('refused:already_paid');
  });

  it("detects the payer's cancelAuthorization on chain: subscription.revoked once, and the next charge is refused", async () => {
    const account = payer();
    const nonce = evmSubscriptionNonce(
      { id: (await db.subscription.findUniqueOrThrow({ where: { id: subscriptionId } })).challengeId, realm: 'news.example' },
      2,
    );
    const hash = await cancelOnChain(account, nonce);

    const watcher = facilitator.app.get(RevocationWatcher, { strict: false });
    expect(await watcher.pollOnce()).toBe(1);
    expect(await watcher.pollOnce()).toBe(0);
    const revoked = await eventsOf(subscriptionId, 'subscription.revoked');
    expect(revoked[0]!.data).toMatchObject({ subscriptionId, reason: 'authorization_canceled', nonce, txHash: hash });
    const [row] = await db.$queryRawUnsafe<{ state: string; live: number }[]>(
      `SELECT s.state, (SELECT count(*)::int FROM facilitator.subscription_authorizations a WHERE a.subscription_id = s.id AND a.sealed IS NOT NULL) AS live
         FROM facilitator.subscriptions s WHERE s.id = $1`,
      subscriptionId,
    );
    expect(row).toEqual({ state: 'revoked', live: 0 });

    await chain.increaseTime(DAY);
    await syncClock();
    const service = facilitator.app.get(SubscriptionCommandsService, { strict: false });
    expect(await service.run(charge(subscriptionId, 2, 0))).toBe('refused:revoked');
    await until('one revoked event only', () =>
      received.filter((m) => m.type === 'subscription.revoked' && (m.data as any).subscriptionId === subscriptionId).length === 1 ? true : undefined,
    );
  });

  it('a charge finds a cancel the watcher has not read yet (authorizationState) and revokes', async () => {
    const account = payerAccount(manifest, 4);
    const routeTerms = terms('20000');
    const { credential, challenge } = await subscribe(routeTerms, account);
    const settled = await as('/mpp/settle', { credential, terms: routeTerms });
    expect(settled.status, JSON.stringify(settled.body)).toBe(200);
    const id = settled.body.receipt.subscriptionId as string;
    const nonce = evmSubscriptionNonce(challenge, 1);
    await cancelOnChain(account, nonce);
    await chain.increaseTime(DAY);
    await syncClock();
    const service = facilitator.app.get(SubscriptionCommandsService, { strict: false });
    expect(await service.run(charge(id, 1, 0))).toBe('refused:revoked');
    const revoked = await eventsOf(id, 'subscription.revoked');
    expect(revoked[0]!.data).toMatchObject({ reason: 'authorization_canceled', nonce });
  });

  it('carries out a cancel: at period end the later authorizations are destroyed, immediately all; subscription.canceled; later charges refused', async () => {
    const account = payerAccount(manifest, 5);
    const routeTerms = terms('30000');
    const { credential } = await subscribe(routeTerms, account);
    const settled = await as('/mpp/settle', { credential, terms: routeTerms });
    expect(settled.status, JSON.stringify(settled.body)).toBe(200);
    const id = settled.body.receipt.subscriptionId as string;
    const sub = await db.subscription.findUniqueOrThrow({ where: { id } });
    const periodOneStart = new Date(sub.anchor.getTime() + DAY * 1000);
    const service = facilitator.app.get(SubscriptionCommandsService, { strict: false });
    const atEnd = command({ type: 'cancel', subscriptionId: id, commandId: `cancel-${id}-1`, at: 'period_end', effectiveAt: periodOneStart.toISOString() });
    expect(await service.run(atEnd)).toBe('canceled');
    expect(await service.run(atEnd)).toBe('done');
    const live = () =>
      db.$queryRawUnsafe<{ period_index: number }[]>(
        `SELECT period_index FROM facilitator.subscription_authorizations WHERE subscription_id = $1 AND sealed IS NOT NULL AND destroyed_at IS NULL ORDER BY 1`,
        id,
      );
    expect(await live()).toEqual([{ period_index: 0 }]);
    const canceled = await eventsOf(id, 'subscription.canceled');
    expect(canceled[0]!.data).toEqual({ subscriptionId: id, commandId: `cancel-${id}-1`, at: 'period_end', effectiveAt: periodOneStart.toISOString() });

    await chain.increaseTime(DAY);
    await syncClock();
    expect(await service.run(charge(id, 1, 0))).toBe('refused:canceled');

    const now = command({ type: 'cancel', subscriptionId: id, commandId: `cancel-${id}-2`, at: 'immediately', effectiveAt: new Date().toISOString() });
    expect(await service.run(now)).toBe('canceled');
    expect(await live()).toEqual([]);
    expect((await db.subscription.findUniqueOrThrow({ where: { id } })).state).toBe('canceled');
    await eventsOf(id, 'subscription.canceled', 2);
  });

  it('drops a command for another merchant’s subscription', async () => {
    const service = facilitator.app.get(SubscriptionCommandsService, { strict: false });
    expect(await service.run({ ...charge(subscriptionId, 3, 0), merchantId: '00000000-0000-4000-8000-000000000000' })).toBe('not_found');
  });

  it('takes a refund command: a period without a confirmed charge is dropped; without a refund wallet it is denied once, told as refund_failed once', async () => {
    const service = facilitator.app.get(SubscriptionCommandsService, { strict: false });
    const refund = (periodIndex: number) =>
      command({ type: 'refund', subscriptionId, commandId: `refund-${subscriptionId}-${periodIndex}`, periodIndex, amount: '1000', reason: 'unused_part' });
    expect(await service.run(refund(7))).toBe('refund:no_paid_charge');
    // this merchant has no REFUND_WALLET_KEYS entry: the refund is recorded denied, and asking again answers that refund
    expect(await service.run(refund(0))).toBe('refund:denied');
    expect(await service.run(refund(0))).toBe('refund:denied');
    const rows = await db.refund.findMany({ where: { merchantId: merchant.merchantId, idempotencyKey: `refund-${subscriptionId}-0` } });
    expect(rows.map((r) => [r.status, r.denialReason, r.amount.toString()])).toEqual([['denied', 'refund_wallet_not_configured', '1000']]);
    const period0 = await db.payment.findFirstOrThrow({ where: { subscriptionId, subscriptionPeriod: 0 } });
    expect(rows[0]!.paymentId).toBe(period0.id);
    // the ledger waits for the outcome of the refund it asked for: the denial is a payment.refund_failed, once
    await until('the denial on the outbox', async () =>
      received.some((m) => m.paymentId === period0.id && m.type === 'payment.refund_failed') ? true : undefined,
    );
    await new Promise((r) => setTimeout(r, 200)); // the relay polls every 20 ms
    const told = received.filter((m) => m.paymentId === period0.id && m.type.startsWith('payment.refund'));
    expect(told.map((m) => [m.type, (m.data as { failureReason: string }).failureReason, (m.data as { idempotencyKey: string }).idempotencyKey])).toEqual([
      ['payment.refund_failed', 'denied:refund_wallet_not_configured', `refund-${subscriptionId}-0`],
    ]);
    expect(await service.run({ ...refund(0), merchantId: '00000000-0000-4000-8000-000000000000' })).toBe('not_found');
  });

  it('rotates the sealing key: new key first re-seals every live row, after which the old key can be dropped', async () => {
    const routeTerms = terms('10000');
    const { credential, payload } = await subscribe(routeTerms, payerAccount(manifest, 6));
    const settled = await as('/mpp/settle', { credential, terms: routeTerms });
    expect(settled.status, JSON.stringify(settled.body)).toBe(200);
    const id = settled.body.receipt.subscriptionId as string;
    const k2 = `k2:${keyMaterial()}`;
    const api = (keys: string) =>
      startFacilitator({ CHAIN_MANIFEST: chain.manifestPath, SUBSCRIPTION_SEALING_KEYS: keys, FACILITATOR_ROLE: 'api', API_KEY_CACHE_MS: '0' });
    const during = await api(`${k2},${k1}`);
    try {
      const vault = during.app.get(AuthorizationVault, { strict: false });
      expect(await vault.underOldKeys()).toBeGreaterThan(0);
      while ((await vault.resealBatch()) > 0);
      expect(await vault.underOldKeys()).toBe(0);
    } finally {
      await during.close();
    }
    const keyIds = await db.$queryRawUnsafe<{ key_id: string }[]>(
      `SELECT DISTINCT key_id FROM facilitator.subscription_authorizations WHERE sealed IS NOT NULL`,
    );
    expect(keyIds).toEqual([{ key_id: 'k2' }]);
    const after = await api(k2);
    try {
      const [row] = await db.$queryRawUnsafe<{ nonce: string; sealed: Buffer; key_id: string }[]>(
        `SELECT nonce, sealed, key_id FROM facilitator.subscription_authorizations WHERE subscription_id = $1 AND period_index = 1`,
        id,
      );
      const vault = after.app.get(AuthorizationVault, { strict: false });
      expect(vault.open(id, 1, row!.nonce, Buffer.from(row!.sealed), row!.key_id)).toBe(payload.authorizations[1]!.signature.toLowerCase());
      // the old key alone no longer opens it
      const old = facilitator.app.get(AuthorizationVault, { strict: false });
      expect(() => old.open(id, 1, row!.nonce, Buffer.from(row!.sealed), row!.key_id)).toThrow(/not in SUBSCRIPTION_SEALING_KEYS/);
    } finally {
      await after.close();
    }
    // a process that was not given the new key refuses the renewal (rail_error), it does not retry forever
    await chain.increaseTime(DAY);
    await syncClock();
    const service = facilitator.app.get(SubscriptionCommandsService, { strict: false });
    expect(await service.run(charge(id, 1, 0))).toBe('refused:rail_error');
    const refused = await eventsOf(id, 'subscription.charge_refused');
    expect((refused[0]!.data as any).message).toContain('cannot be opened');
  });

  it('renewals due at once are recorded without waiting and settle together in batch transactions', async () => {
    const routeTerms = terms('7000');
    const ids: string[] = [];
    for (const index of [0, 1, 7, 8]) {
      const { credential } = await subscribe(routeTerms, payerAccount(manifest, index));
      const settled = await as('/mpp/settle', { credential, terms: routeTerms });
      expect(settled.status, JSON.stringify(settled.body)).toBe(200);
      ids.push(settled.body.receipt.subscriptionId);
    }
    await chain.increaseTime(DAY);
    await syncClock();
    const before = await balanceOf(chain.client, usdc, recipient);
    const service = facilitator.app.get(SubscriptionCommandsService, { strict: false });
    expect(await Promise.all(ids.map((id) => service.run(charge(id, 1, 0))))).toEqual(['charged', 'charged', 'charged', 'charged']);
    const rows = await until('four renewals confirmed', async () => {
      const found = await db.$queryRawUnsafe<{ tx_hash: string }[]>(
        `SELECT tx_hash FROM facilitator.payments WHERE subscription_id = ANY($1::text[]) AND subscription_period = 1 AND state = 'confirmed'`,
        ids,
      );
      return found.length === 4 ? found : undefined;
    });
    expect(new Set(rows.map((r) => r.tx_hash)).size).toBeLessThan(4);
    expect(await balanceOf(chain.client, usdc, recipient)).toBe(before + 4n * 7_000n);
  });

  it('a batch of charges answers each command on its own, and records the good ones in one go', async () => {
    const routeTerms = terms('7100');
    const [a, b] = await Promise.all(
      [0, 1].map(async (index) => {
        const { credential } = await subscribe(routeTerms, payerAccount(manifest, index));
        const settled = await as('/mpp/settle', { credential, terms: routeTerms });
        expect(settled.status, JSON.stringify(settled.body)).toBe(200);
        return settled.body.receipt.subscriptionId as string;
      }),
    );
    // the payer of the third withdraws period 1 on chain: the batch's simulation fails it, and its own check says why
    const account = payerAccount(manifest, 7);
    const { credential, challenge } = await subscribe(routeTerms, account);
    const settled = await as('/mpp/settle', { credential, terms: routeTerms });
    expect(settled.status, JSON.stringify(settled.body)).toBe(200);
    const c = settled.body.receipt.subscriptionId as string;
    const nonce = evmSubscriptionNonce(challenge, 1);
    await cancelOnChain(account, nonce);
    await chain.increaseTime(DAY);
    await syncClock();
    const before = await balanceOf(chain.client, usdc, recipient);
    const service = facilitator.app.get(SubscriptionCommandsService, { strict: false });
    const unknown = 'u'.repeat(22);
    expect(await service.chargeMany([charge(a, 1), charge(b, 1), charge(a, 1), charge(c, 1), charge(unknown, 1), charge(a, 3)] as never)).toEqual([
      'charged',
      'charged',
      'done',
      'refused:revoked',
      'not_found',
      'refused:window_not_open',
    ]);
    // carried out already: the same batch again changes nothing
    expect(await service.chargeMany([charge(a, 1), charge(b, 1)] as never)).toEqual(['done', 'done']);
    await until('both renewals confirmed', async () => {
      const found = await db.$queryRawUnsafe<{ n: number }[]>(
        `SELECT count(*)::int AS n FROM facilitator.payments WHERE subscription_id = ANY($1::text[]) AND subscription_period = 1 AND state = 'confirmed'`,
        [a, b],
      );
      return found[0]!.n === 2 ? true : undefined;
    });
    expect(await balanceOf(chain.client, usdc, recipient)).toBe(before + 2n * 7_100n);
    const [charges] = await db.$queryRawUnsafe<{ n: number }[]>(
      `SELECT count(*)::int AS n FROM facilitator.payments WHERE subscription_id = ANY($1::text[]) AND subscription_period = 1`,
      [a, b, c],
    );
    expect(charges!.n).toBe(2);
    expect((await eventsOf(c, 'subscription.revoked'))[0]!.data).toMatchObject({ reason: 'authorization_canceled', nonce });
  });

  describe('a renewal batch goes out as one settlement job', () => {
    /** The settlement jobs added while `run` runs, by name (QueueEvents sees every worker's and producer's adds). */
    const settlementJobsAddedDuring = async <T>(run: () => Promise<T>): Promise<{ result: T; added: { name: string; jobId: string }[] }> => {
      const queueEvents = new QueueEvents(SETTLEMENT_QUEUE, { connection: redis.duplicate(), prefix: facilitator.config.queuePrefix });
      const added: { name: string; jobId: string }[] = [];
      queueEvents.on('added', ({ jobId, name }) => void added.push({ name, jobId }));
      await queueEvents.waitUntilReady();
      try {
        return { result: await run(), added };
      } finally {
        await queueEvents.close();
      }
    };

    const period1 = (subscriptionIds: string[]) =>
      db.$queryRawUnsafe<{ id: string; state: string; tx_hash: string | null; error_reason: string | null }[]>(
        `SELECT id, state::text, tx_hash, error_reason FROM facilitator.payments WHERE subscription_id = ANY($1::text[]) AND subscription_period = 1 ORDER BY id`,
        subscriptionIds,
      );

    const eventsOfPayments = (paymentIds: string[]) =>
      db.$queryRawUnsafe<{ payment_id: string; type: string; data: any }[]>(
        `SELECT payment_id, type, data FROM facilitator.payment_events WHERE payment_id = ANY($1::uuid[]) ORDER BY id`,
        paymentIds,
      );

    const subscribeAll = (routeTerms: ReturnType<typeof terms>, payers: PrivateKeyAccount[]) =>
      Promise.all(
        payers.map(async (account) => {
          const { credential } = await subscribe(routeTerms, account);
          const settled = await as('/mpp/settle', { credential, terms: routeTerms });
          expect(settled.status, JSON.stringify(settled.body)).toBe(200);
          return settled.body.receipt.subscriptionId as string;
        }),
      );

    it('records a batch submitted for all its payments or for none, and confirms many payments in one statement, each once', async () => {
      // rows of a network nobody serves, finished within the test (the recovery sweep looks at rows 5 s old)
      const network = 'eip155:999999';
      const payments = facilitator.app.get(ChainPayments, { strict: false });
      const ids = await Promise.all(
        [0, 1, 2].map(async () => {
          const nonce = `0x${randomBytes(32).toString('hex')}`;
          const id = await payments.claim({
            network,
            asset: usdc.address.toLowerCase(),
            payer: recipient.toLowerCase(),
            nonce,
            payTo: recipient.toLowerCase(),
            amount: 1n,
            validAfter: 0n,
            validBefore: 2n ** 40n,
            scheme: 'exact',
            origin: { protocol: 'x402', x402Version: 2 },
            payloadHash: `batch-${nonce}`,
            settleTo: usdc.address,
            settleData: '0x',
            settleGas: 1n,
          });
          return id!;
        }),
      );
      const signed = (n: number) => ({
        hash: `0x${String(n).repeat(64)}` as Hex,
        nonce: n,
        signer: recipient,
        raw: '0x02' as Hex,
        to: MULTICALL3_ADDRESS,
        data: '0x' as Hex,
        gas: 1n,
        maxFeePerGas: 1n,
        maxPriorityFeePerGas: 1n,
      });
      const states = async () =>
        (
          await db.$queryRawUnsafe<{ id: string; state: string; tx_hash: string | null }[]>(
            `SELECT id, state::text, tx_hash FROM facilitator.payments WHERE id = ANY($1::uuid[])`,
            ids,
          )
        )
          .sort((a, b) => ids.indexOf(a.id) - ids.indexOf(b.id))
          .map((r) => [r.state, r.tx_hash]);
      const stored = async (hash: Hex) =>
        (await db.$queryRawUnsafe<{ n: number }[]>(`SELECT count(*)::int AS n FROM facilitator.payment_transactions WHERE hash = $1`, hash))[0]!.n;

      // the third was sent meanwhile: the batch is recorded for none of them
      expect(await payments.recordSubmitted(ids[2]!, signed(1), network)).toBe(true);
      expect(await payments.recordSubmittedBatch(ids, signed(2), network)).toBe(false);
      expect(await states()).toEqual([
        ['verified', null],
        ['verified', null],
        ['submitted', signed(1).hash],
      ]);
      expect(await stored(signed(2).hash)).toBe(0);
      expect(await payments.recordSubmittedBatch(ids.slice(0, 2), signed(2), network)).toBe(true);
      expect(await stored(signed(2).hash)).toBe(2);

      const receipt = { blockNumber: 7n, blockHash: `0x${'7'.repeat(64)}`, gasUsed: 3n, effectiveGasPrice: 1n };
      const fees = new Map([
        [ids[0]!, 2n],
        [ids[1]!, 1n],
      ]);
      expect(await payments.markConfirmedMany(signed(2).hash, receipt, fees)).toEqual(new Set(ids.slice(0, 2)));
      // a second time, it confirms (and counts gas for) none
      expect(await payments.markConfirmedMany(signed(2).hash, receipt, fees)).toEqual(new Set());
      const confirmedEvents = await db.$queryRawUnsafe<{ payment_id: string; gas_fee: string }[]>(
        `SELECT payment_id, data->>'gasFee' AS gas_fee FROM facilitator.payment_events WHERE payment_id = ANY($1::uuid[]) AND type = 'payment.confirmed'`,
        ids,
      );
      expect(new Map(confirmedEvents.map((e) => [e.payment_id, BigInt(e.gas_fee)]))).toEqual(fees);
      expect((await states()).slice(0, 2)).toEqual([
        ['confirmed', signed(2).hash],
        ['confirmed', signed(2).hash],
      ]);
      await payments.markFailedUnsent(ids[2]!, 'test', 'finished by the test');
    });

    it('a batch whose claims aged in the queue is simulated again together and still goes out as ONE transaction', async () => {
      const routeTerms = terms('7300');
      const subscriptionIds = await subscribeAll(
        routeTerms,
        [2, 3, 4].map((i) => payerAccount(manifest, i)),
      );
      await chain.increaseTime(DAY);
      await syncClock();
      const worker = facilitator.app.get(SettlementWorker, { strict: false }).worker;
      const service = facilitator.app.get(SubscriptionCommandsService, { strict: false });
      const { added } = await settlementJobsAddedDuring(async () => {
        // the batch job waits in a queue nobody takes from, while its claims' gas estimates grow older than they may be used
        await worker.pause(true);
        try {
          expect(await service.chargeMany(subscriptionIds.map((id) => charge(id, 1)) as never)).toEqual(['charged', 'charged', 'charged']);
          await db.$executeRawUnsafe(
            `UPDATE facilitator.payments SET updated_at = now() - interval '1 minute' WHERE subscription_id = ANY($1::text[]) AND subscription_period = 1`,
            subscriptionIds,
          );
        } finally {
          worker.resume();
        }
        await until('three renewals confirmed', async () => ((await period1(subscriptionIds)).every((p) => p.state === 'confirmed') ? true : undefined));
      });
      expect(added.map((a) => a.name)).toEqual(['submit-batch']);
      const rows = await period1(subscriptionIds);
      expect(new Set(rows.map((r) => r.tx_hash)).size).toBe(1);
      const tx = await chain.client.getTransaction({ hash: rows[0]!.tx_hash as Hex });
      expect(decodeFunctionData({ abi: multicall3Abi, data: tx.input }).args[0]).toHaveLength(3);
    });

    let confirmedBatch: { subscriptionIds: string[]; paymentIds: string[]; hash: Hex };

    it('several renewals charged together: ONE Multicall3 transaction, no per-payment job, each confirmed with its event and its own share of the fee', async () => {
      const routeTerms = terms('7200');
      const subscriptionIds = await subscribeAll(
        routeTerms,
        [0, 1, 7, 8].map((i) => payerAccount(manifest, i)),
      );
      await chain.increaseTime(DAY);
      await syncClock();
      const before = await balanceOf(chain.client, usdc, recipient);
      const service = facilitator.app.get(SubscriptionCommandsService, { strict: false });
      const { result, added } = await settlementJobsAddedDuring(async () => {
        const answers = await service.chargeMany(subscriptionIds.map((id) => charge(id, 1)) as never);
        await until('four renewals confirmed', async () => ((await period1(subscriptionIds)).every((p) => p.state === 'confirmed') ? true : undefined));
        return answers;
      });
      expect(result).toEqual(['charged', 'charged', 'charged', 'charged']);
      const rows = await period1(subscriptionIds);
      const paymentIds = rows.map((r) => r.id);
      // one submit-batch job, and not one submit or confirm job of any of its payments
      expect(added.map((a) => a.name)).toEqual(['submit-batch']);

      const hash = rows[0]!.tx_hash as Hex;
      expect(new Set(rows.map((r) => r.tx_hash))).toEqual(new Set([hash]));
      const tx = await chain.client.getTransaction({ hash });
      expect(tx.to?.toLowerCase()).toBe(MULTICALL3_ADDRESS.toLowerCase());
      expect(decodeFunctionData({ abi: multicall3Abi, data: tx.input }).args[0]).toHaveLength(4);
      expect(await balanceOf(chain.client, usdc, recipient)).toBe(before + 4n * 7_200n);

      const receipt = await chain.client.getTransactionReceipt({ hash });
      const fee = receipt.gasUsed * receipt.effectiveGasPrice;
      const recorded = await eventsOfPayments(paymentIds);
      for (const id of paymentIds) {
        expect(recorded.filter((e) => e.payment_id === id).map((e) => e.type)).toEqual(['payment.verified', 'payment.submitted', 'payment.confirmed']);
      }
      const confirmedEvents = recorded.filter((e) => e.type === 'payment.confirmed');
      expect(confirmedEvents.map((e) => e.data)).toEqual(
        paymentIds.map(() => expect.objectContaining({ txHash: hash, blockHash: receipt.blockHash, blockNumber: receipt.blockNumber.toString() })),
      );
      const shares = paymentIds.map((id) => BigInt(confirmedEvents.find((e) => e.payment_id === id)!.data.gasFee));
      expect(shares.reduce((a, b) => a + b, 0n)).toBe(fee);
      expect(shares.every((share) => share >= fee / 4n && share <= fee / 4n + 1n)).toBe(true);
      // the ledger hears of each through the outbox
      for (const id of subscriptionIds) await eventsOf(id, 'payment.confirmed');
      confirmedBatch = { subscriptionIds, paymentIds, hash };
    });

    it('the same batch job delivered again changes nothing', async () => {
      const { subscriptionIds, paymentIds, hash } = confirmedBatch;
      const eventsBefore = await eventsOfPayments(paymentIds);
      const blockBefore = await chain.client.getBlockNumber({ cacheTime: 0 });
      const settlement = facilitator.app.get(SettlementQueue, { strict: false });
      const queueEvents = new QueueEvents(SETTLEMENT_QUEUE, { connection: redis.duplicate(), prefix: facilitator.config.queuePrefix });
      await queueEvents.waitUntilReady();
      try {
        // its job id is made from its payments: the completed job was removed, so this is the same job run again
        const jobId = batchJobId(paymentIds);
        const completed = new Promise<void>((resolve) => queueEvents.on('completed', (event) => event.jobId === jobId && resolve()));
        await settlement.submitBatch(paymentIds);
        await completed;
      } finally {
        await queueEvents.close();
      }
      expect(await eventsOfPayments(paymentIds)).toEqual(eventsBefore);
      expect((await period1(subscriptionIds)).map((r) => [r.state, r.tx_hash])).toEqual(paymentIds.map(() => ['confirmed', hash]));
      expect(await chain.client.getBlockNumber({ cacheTime: 0 })).toBe(blockBefore);
    });

    it('delivered again after its broadcast (the receipt late), the job hands its payments to confirm and sends nothing more', async () => {
      const subscriptionIds = await subscribeAll(
        terms('7400'),
        [0, 1, 7].map((i) => payerAccount(manifest, i)),
      );
      await chain.increaseTime(DAY);
      await syncClock();
      const service = facilitator.app.get(SubscriptionCommandsService, { strict: false });
      const settlement = facilitator.app.get(SettlementQueue, { strict: false });
      const queueEvents = new QueueEvents(SETTLEMENT_QUEUE, { connection: redis.duplicate(), prefix: facilitator.config.queuePrefix });
      await queueEvents.waitUntilReady();
      const completed = new Set<string>();
      queueEvents.on('completed', ({ jobId }) => void completed.add(jobId));
      try {
        const { added } = await settlementJobsAddedDuring(() =>
          withAutomineOff(chain.client, async () => {
            expect(await service.chargeMany(subscriptionIds.map((id) => charge(id, 1)) as never)).toEqual(['charged', 'charged', 'charged']);
            const rows = await until('the batch sent', async () => {
              const found = await period1(subscriptionIds);
              return found.every((p) => p.state === 'submitted') ? found : undefined;
            });
            const paymentIds = rows.map((r) => r.id);
            // the job waits a few seconds for the receipt, then hands its payments to confirm jobs
            await until('the batch job done', () => [...completed].some((id) => id.startsWith('submit-batch-')) || undefined, 20_000);
            completed.clear();
            // the same payments in a job again (in id order, so under another job id than the first)
            await settlement.submitBatch(paymentIds);
            await until('the batch job done again', () => completed.has(batchJobId(paymentIds)) || undefined, 20_000);
            const pending = (await chain.client.request({ method: 'txpool_content' as never })) as { pending: Record<string, Record<string, unknown>> };
            expect(Object.values(pending.pending).flatMap((byNonce) => Object.values(byNonce))).toHaveLength(1);
          }),
        );
        expect(added.filter((a) => a.name === 'submit-batch')).toHaveLength(2);
        expect(added.filter((a) => a.name === 'submit')).toEqual([]);
      } finally {
        await queueEvents.close();
      }
      await mineBlock(chain.client);
      const rows = await until('all three confirmed', async () => {
        const found = await period1(subscriptionIds);
        return found.every((p) => p.state === 'confirmed') ? found : undefined;
      });
      expect(new Set(rows.map((r) => r.tx_hash)).size).toBe(1);
      const recorded = await eventsOfPayments(rows.map((r) => r.id));
      expect(recorded.filter((e) => e.type === 'payment.submitted')).toHaveLength(3);
      expect(recorded.filter((e) => e.type === 'payment.confirmed')).toHaveLength(3);
    });

    it('a transfer failing inside the batch: the others are confirmed from the batch, it ends through the per-payment jobs with its own reason', async () => {
      const amount = 7_300n;
      const routeTerms = terms(amount.toString());
      // A payer with two subscriptions that can afford one of their renewals: each renewal alone passes its simulation,
      // both go out in one batch, and only one can move the money.
      const funder = payerAccount(manifest, 1);
      const broke = privateKeyToAccount(generatePrivateKey());
      const { createWalletClient, http, erc20Abi } = await import('viem');
      const wallet = createWalletClient({ account: funder, chain: chain.client.chain, transport: http(manifest.rpcUrl) });
      await chain.client.waitForTransactionReceipt({
        hash: await wallet.writeContract({
          address: usdc.address as Address,
          abi: erc20Abi,
          functionName: 'transfer',
          args: [broke.address, 2n * amount + (3n * amount) / 2n], // period 0 of both, and one and a half renewals
        } as never),
      });
      const brokeSubscriptions = await subscribeAll(routeTerms, [broke, broke]);
      const others = await subscribeAll(
        routeTerms,
        [0, 8].map((i) => payerAccount(manifest, i)),
      );
      await chain.increaseTime(DAY);
      await syncClock();
      const before = await balanceOf(chain.client, usdc, recipient);
      const service = facilitator.app.get(SubscriptionCommandsService, { strict: false });
      const all = [...brokeSubscriptions, ...others];
      const { result, added } = await settlementJobsAddedDuring(async () => {
        const answers = await service.chargeMany(all.map((id) => charge(id, 1)) as never);
        await until('every renewal settled or failed', async () =>
          (await period1(all)).every((p) => p.state === 'confirmed' || p.state === 'failed') ? true : undefined,
        );
        return answers;
      });
      expect(result).toEqual(['charged', 'charged', 'charged', 'charged']);

      const rows = await period1(all);
      const failed = rows.filter((r) => r.state === 'failed');
      expect(failed).toHaveLength(1);
      expect(failed[0]!.error_reason).toBe('invalid_exact_evm_insufficient_balance');
      const confirmed = rows.filter((r) => r.state === 'confirmed');
      expect(new Set(confirmed.map((r) => r.tx_hash)).size).toBe(1);
      expect(await balanceOf(chain.client, usdc, recipient)).toBe(before + 3n * amount);
      expect(await balanceOf(chain.client, usdc, broke.address)).toBe(amount / 2n);

      // it was in the batch (submitted with it), was detached from it, and its own confirm and submit jobs decided
      const hash = confirmed[0]!.tx_hash as Hex;
      const failedEvents = (await eventsOfPayments([failed[0]!.id])).map((e) => [e.type, e.data.txHash ?? e.data.reason]);
      expect(failedEvents.slice(0, 3)).toEqual([
        ['payment.verified', undefined],
        ['payment.submitted', hash],
        ['payment.resend', `its transfer failed inside batch ${hash}`],
      ]);
      expect(failedEvents.at(-1)![0]).toBe('payment.failed');
      expect(added.map((a) => a.name).sort()).toEqual(['confirm', 'submit', 'submit-batch']);
      expect(added.filter((a) => a.name !== 'submit-batch').map((a) => a.jobId)).toEqual([`confirm-${failed[0]!.id}`, `submit-${failed[0]!.id}`]);

      // the carried ones share the whole fee
      const receipt = await chain.client.getTransactionReceipt({ hash });
      const shares = (await eventsOfPayments(confirmed.map((r) => r.id))).filter((e) => e.type === 'payment.confirmed').map((e) => BigInt(e.data.gasFee));
      expect(shares).toHaveLength(3);
      expect(shares.reduce((a, b) => a + b, 0n)).toBe(receipt.gasUsed * receipt.effectiveGasPrice);
    });
  });

  it('dunning: a renewal the payer cannot fund is refused before anything is recorded (rail_error), and a later attempt of the period is charged', async () => {
    const account = payerAccount(manifest, 9);
    const routeTerms = terms('9000');
    const { credential } = await subscribe(routeTerms, account);
    const settled = await as('/mpp/settle', { credential, terms: routeTerms });
    expect(settled.status, JSON.stringify(settled.body)).toBe(200);
    const id = settled.body.receipt.subscriptionId as string;
    const { createWalletClient, http, erc20Abi } = await import('viem');
    const wallet = (from: PrivateKeyAccount) => createWalletClient({ account: from, chain: chain.client.chain, transport: http(manifest.rpcUrl) });
    const balance = await balanceOf(chain.client, usdc, account.address);
    const parked = payerAccount(manifest, 8);
    const move = async (from: PrivateKeyAccount, to: Address, amount: bigint) =>
      chain.client.waitForTransactionReceipt({
        hash: await wallet(from).writeContract({ address: usdc.address as Address, abi: erc20Abi, functionName: 'transfer', args: [to, amount] } as never),
      });
    await move(account, parked.address, balance);
    await chain.increaseTime(DAY);
    await syncClock();
    const service = facilitator.app.get(SubscriptionCommandsService, { strict: false });
    expect(await service.run(charge(id, 1, 0))).toBe('refused:rail_error');
    const [none] = await db.$queryRawUnsafe<{ n: number }[]>(
      `SELECT count(*)::int AS n FROM facilitator.payments WHERE subscription_id = $1 AND subscription_period = 1`,
      id,
    );
    expect(none!.n).toBe(0);
    await move(parked, account.address, balance);
    expect(await service.run(charge(id, 1, 1))).toBe('charged');
    await until('the retried renewal confirmed', async () => {
      const [row] = await db.$queryRawUnsafe<{ state: string; subscription_attempt: number }[]>(
        `SELECT state::text, subscription_attempt FROM facilitator.payments WHERE subscription_id = $1 AND subscription_period = 1`,
        id,
      );
      return row?.state === 'confirmed' ? row : undefined;
    });
    const refused = await eventsOf(id, 'subscription.charge_refused');
    expect(refused[0]!.data).toMatchObject({ periodIndex: 1, attempt: 0, reason: 'rail_error' });
  });

  it('a charge-batch job carries out each charge once; one to try again becomes its own job and is charged later; the batch again changes nothing', async () => {
    const routeTerms = terms('7200');
    const nowSeconds = () => facilitator.app.get(Clock, { strict: false }).nowSeconds();
    // a and b anchored two minutes before c: when c's period 1 is about to open, theirs are open
    const [a, b, c] = await Promise.all(
      [
        [0, 120n],
        [1, 120n],
        [7, 2n],
      ].map(async ([index, lead]) => {
        const { credential } = await subscribe(routeTerms, payerAccount(manifest, Number(index)), undefined, nowSeconds() - BigInt(lead!));
        const settled = await as('/mpp/settle', { credential, terms: routeTerms });
        expect(settled.status, JSON.stringify(settled.body)).toBe(200);
        return settled.body.receipt.subscriptionId as string;
      }),
    );
    await chain.increaseTime(DAY - 60);
    await syncClock();
    const before = await balanceOf(chain.client, usdc, recipient);
    const queue = new Queue(SUBSCRIPTION_COMMANDS_QUEUE, { connection: redis, prefix: facilitator.config.queuePrefix });
    try {
      // as the ledger publishes (its SUBSCRIPTION_COMMAND_JOB_OPTIONS); a's charge twice, as a batch may hold
      const options = { attempts: 10, backoff: { type: 'exponential', delay: 1_000 }, removeOnComplete: { age: 3600 } };
      const commands = [charge(a!, 1), charge(b!, 1), charge(c!, 1), charge(a!, 1)];
      const batch = await queue.add(CHARGE_BATCH_JOB_NAME, { commands }, { ...options, jobId: chargeBatchJobId(commands) });
      const answered = await until('the batch answered', async () => (await queue.getJob(batch.id!))?.returnvalue ?? undefined);
      // c's period 1 opens in about a minute here: tried again, on its own
      expect(answered).toEqual({ charged: 2, done: 1, retried: 1 });
      const retried = (await queue.getJob(subscriptionCommandJobId(commands[2]!)))!;
      expect(retried).toBeDefined();
      expect(retried.name).toBe('charge');
      expect(retried.data).toEqual(commands[2]);
      expect(retried.opts).toMatchObject({ attempts: 10, backoff: { type: 'exponential', delay: 1_000 } });
      const paid = async (ids: string[]) => {
        const [row] = await db.$queryRawUnsafe<{ n: number }[]>(
          `SELECT count(*)::int AS n FROM facilitator.payments WHERE subscription_id = ANY($1::text[]) AND subscription_period = 1`,
          ids,
        );
        return row!.n;
      };
      expect(await paid([a!, b!])).toBe(2);
      expect(await paid([c!])).toBe(0);
      // nothing refused: the charge was neither carried out nor given up
      expect(received.filter((m) => m.type === 'subscription.charge_refused' && [a, b, c].includes((m.data as any).subscriptionId))).toEqual([]);

      // c's window opens: its own job, retried with backoff, charges it
      await chain.increaseTime(120);
      await syncClock();
      const job = await until('the retried charge done', async () => {
        const found = await queue.getJob(subscriptionCommandJobId(commands[2]!));
        return found?.returnvalue ? found : undefined;
      });
      expect(job.returnvalue).toBe('charged');
      expect(job.attemptsMade).toBeGreaterThanOrEqual(1);

      // the same batch again: dropped under its job id; under another (as after the first was removed) it changes nothing
      await queue.add(CHARGE_BATCH_JOB_NAME, { commands }, { ...options, jobId: chargeBatchJobId(commands) });
      expect((await queue.getJob(batch.id!))?.returnvalue).toEqual(answered);
      const again = await queue.add(CHARGE_BATCH_JOB_NAME, { commands }, { ...options, jobId: `${chargeBatchJobId(commands)}-again` });
      expect(await until('the batch again answered', async () => (await queue.getJob(again.id!))?.returnvalue ?? undefined)).toEqual({ done: 4 });

      // a batch that breaks the contract (a cancel cannot travel in one) fails for good, changing nothing
      const cancel = command({ type: 'cancel', subscriptionId: a!, commandId: `cancel-${a}`, at: 'immediately', effectiveAt: new Date().toISOString() });
      const malformed = await queue.add(CHARGE_BATCH_JOB_NAME, { commands: [charge(b!, 2), cancel] }, { ...options, jobId: `malformed-batch-${a}` });
      const failed = await until('the malformed batch failed', async () => ((await malformed.isFailed()) ? (await queue.getJob(malformed.id!))! : undefined));
      expect(failed.failedReason).toContain('malformed subscription command: commands.1');
      expect(failed.attemptsMade).toBe(1);
      expect(await db.subscription.findUniqueOrThrow({ where: { id: a! }, select: { state: true } })).toEqual({ state: 'active' });

      await until('the three renewals confirmed', async () => {
        const [row] = await db.$queryRawUnsafe<{ n: number }[]>(
          `SELECT count(*)::int AS n FROM facilitator.payments WHERE subscription_id = ANY($1::text[]) AND subscription_period = 1 AND state = 'confirmed'`,
          [a, b, c],
        );
        return row!.n === 3 ? true : undefined;
      });
      expect(await paid([a!, b!, c!])).toBe(3);
      const [charges] = await db.$queryRawUnsafe<{ n: number }[]>(
        `SELECT count(*)::int AS n FROM facilitator.subscription_charges WHERE subscription_id = ANY($1::text[]) AND period_index = 1 AND outcome = 'charged'`,
        [a, b, c],
      );
      expect(charges!.n).toBe(3);
      expect(await balanceOf(chain.client, usdc, recipient)).toBe(before + 3n * 7_200n);
    } finally {
      await queue.close();
    }
  });
});
