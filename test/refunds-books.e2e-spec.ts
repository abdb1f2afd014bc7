import { randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import { createWalletClient, defineChain, http, parseAbi, type Address, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { PAYMENT_EVENTS_QUEUE, parsePaymentEventMessage, type PaymentEventMessage } from '@mp/clients';
import { AccountCode, chartAccountId, paymentTransferId, TransferCode } from '@mp/ledger';
import { chainAsset } from '@mp/reconciliation';
import { PaymentIngestion } from '../apps/ledger/src/ingestion/payment-ingestion.service';
import { payerAccount, signAuthorization, testChain, v2Body, v2Requirements } from './support/chain';
import { startFacilitator, type RunningFacilitator } from './support/facilitator';
import { call } from './support/http';
import { startLedger, type RunningLedger } from './support/ledger-app';
import { createMerchant, type TestMerchant } from './support/merchants';
import { until } from './support/webhook-receiver';

/**
 * Refunds in the books, over the real pipeline: the facilitator refunds on anvil, its outbox carries
 * payment.refund_pending and payment.refunded to the ledger through BullMQ, and the ledger books each refund once as a
 * transfer of its own (code 2, revenue → payerClearing, reference the refund's transaction), however often it arrives.
 */
describe('refunds booked by the ledger', () => {
  const { manifest, client } = testChain();
  const usdc = manifest.tokens.usdc;
  const USDC = chainAsset(manifest.network, usdc.address);
  const chain = defineChain({
    id: manifest.chainId,
    name: 'anvil',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [manifest.rpcUrl] } },
  });
  const payTo = privateKeyToAccount(generatePrivateKey()).address;
  const refundKey = generatePrivateKey();
  const refundWallet = privateKeyToAccount(refundKey).address;
  const queuePrefix = `mp:test-refund-books-${randomUUID().slice(0, 8)}`;

  let facilitator: RunningFacilitator;
  let ledger: RunningLedger;
  let merchant: TestMerchant;

  beforeAll(async () => {
    merchant = createMerchant('refund books', undefined, { receivingAddresses: [`${manifest.network}:${payTo}`] });
    await client.request({ method: 'anvil_setBalance' as never, params: [refundWallet, '0x8ac7230489e80000'] as never });
    const deployer = createWalletClient({
      account: privateKeyToAccount(manifest.accounts.deployer.privateKey as Hex),
      chain,
      transport: http(manifest.rpcUrl),
    });
    const minted = await deployer.writeContract({
      address: usdc.address as Address,
      abi: parseAbi(['function mint(address to, uint256 amount)']),
      functionName: 'mint',
      args: [refundWallet, 1_000_000n],
    });
    await client.waitForTransactionReceipt({ hash: minted });
    facilitator = await startFacilitator({
      REFUND_WALLET_KEYS: JSON.stringify({ [merchant.merchantId]: refundKey }),
      OUTBOX_POLL_MS: '20',
      QUEUE_PREFIX: queuePrefix,
    });
    ledger = await startLedger({ LEDGER_INGEST: 'true', FACILITATOR_URL: facilitator.url, QUEUE_PREFIX: queuePrefix });
  });
  afterAll(async () => {
    await ledger?.close();
    await facilitator?.close();
  });

  const account = async (role: keyof typeof AccountCode) => (await ledger.ledger.lookupAccounts(merchant.merchantId, [chartAccountId(role, USDC)]))[0];
  /** The merchant's refund transfers (code 2), oldest first. */
  const refundTransfers = async () => {
    const page = await ledger.ledger.listTransfers(merchant.merchantId, { code: TransferCode.refund }, 100);
    return (page?.rows ?? [])
      .map((t) => ({ id: t.id, amount: t.amount, reference: t.reference, debit: t.debitAccountId, credit: t.creditAccountId }))
      .reverse();
  };

  it('books each executed refund once as its own transfer, redelivered or not, and the balances add up', async () => {
    const payload = await signAuthorization(payerAccount(manifest, 7), usdc, manifest.chainId, { to: payTo, value: 10_000n });
    const settled = await call(`${facilitator.url}/settle`, {
      key: merchant.apiKey,
      body: v2Body(payload, v2Requirements(manifest, usdc, 10_000n, { payTo })),
    });
    expect(settled.body.success).toBe(true);
    const refundBody = (amount: string) => ({
      x402Version: 2,
      paymentReference: { network: manifest.network, txHash: settled.body.transaction },
      amount,
      reason: 'service_defective',
      idempotencyKey: randomUUID(),
    });
    const first = await call(`${facilitator.url}/refunds`, { key: merchant.apiKey, body: refundBody('2500') });
    const second = await call(`${facilitator.url}/refunds`, { key: merchant.apiKey, body: refundBody('7500') });
    const denied = await call(`${facilitator.url}/refunds`, { key: merchant.apiKey, body: refundBody('1') });
    expect([first.body.status, second.body.status, denied.body.status]).toEqual(['executed', 'executed', 'denied']);

    const revenue = await until('both refunds booked', async () => {
      const found = await account('revenue');
      return found?.debitsPosted === 10_000n ? found : undefined;
    });
    expect(revenue).toMatchObject({ creditsPosted: 10_000n, debitsPosted: 10_000n, creditsPending: 0n, debitsPending: 0n });
    expect(await account('payerClearing')).toMatchObject({ debitsPosted: 10_000n, creditsPosted: 10_000n });
    const paymentId = first.body.paymentId as string;
    expect(await refundTransfers()).toEqual([
      {
        id: paymentTransferId(paymentId, `refund:${first.body.id}`),
        amount: 2_500n,
        reference: first.body.refundTxHash,
        debit: chartAccountId('revenue', USDC),
        credit: chartAccountId('payerClearing', USDC),
      },
      {
        id: paymentTransferId(paymentId, `refund:${second.body.id}`),
        amount: 7_500n,
        reference: second.body.refundTxHash,
        debit: chartAccountId('revenue', USDC),
        credit: chartAccountId('payerClearing', USDC),
      },
    ]);

    // the same event published again under a new job id (as after a Redis loss), and booked directly once more
    const [event] = await ledger.db.$queryRawUnsafe<{ id: string }[]>(
      `SELECT id::text FROM facilitator.payment_events WHERE payment_id = $1::uuid AND type = 'payment.refunded' ORDER BY id LIMIT 1`,
      paymentId,
    );
    const message = await messageOf(event.id);
    const queue = new Queue(PAYMENT_EVENTS_QUEUE, { connection: { url: facilitator.config.redisUrl }, prefix: queuePrefix });
    try {
      const job = await queue.add('redelivery', message, { jobId: `redelivery-${event.id}` });
      await until('the redelivery is consumed', async () => ((await job.getState()) === 'completed' ? true : undefined));
    } finally {
      await queue.close();
    }
    expect(await ledger.app.get(PaymentIngestion).book(message)).toBe('booked');
    expect(await refundTransfers()).toHaveLength(2);
    expect(await account('revenue')).toMatchObject({ creditsPosted: 10_000n, debitsPosted: 10_000n });
  });

  it('a pending or failed refund books nothing', async () => {
    const before = await refundTransfers();
    const ingestion = ledger.app.get(PaymentIngestion);
    const [pending] = await ledger.db.$queryRawUnsafe<{ id: string }[]>(
      `SELECT e.id::text FROM facilitator.payment_events e JOIN facilitator.payments p ON p.id = e.payment_id
        WHERE p.merchant_id = $1::uuid AND e.type = 'payment.refund_pending' ORDER BY e.id LIMIT 1`,
      merchant.merchantId,
    );
    const pendingMessage = await messageOf(pending.id);
    expect(await ingestion.book(pendingMessage)).toBe('skipped');
    const failed = {
      ...pendingMessage,
      eventId: '999999999',
      type: 'payment.refund_failed',
      data: { ...pendingMessage.data, reference: null, failureReason: 'transaction_reverted', message: 'reverted' },
    };
    const parsed = parsePaymentEventMessage(failed);
    expect(parsed.ok).toBe(true);
    expect(await ingestion.book((parsed as { message: PaymentEventMessage }).message)).toBe('skipped');
    expect(await refundTransfers()).toEqual(before);
  });

  /** The message the relay publishes for an outbox event, as the ledger receives it. */
  async function messageOf(eventId: string): Promise<PaymentEventMessage> {
    const [row] = await ledger.db.$queryRawUnsafe<
      { type: string; paymentId: string; occurredAt: Date; data: unknown; payment: Record<string, unknown>; merchantId: string }[]
    >(
      `SELECT e.type, e.payment_id::text AS "paymentId", e.created_at AS "occurredAt", e.data, p.merchant_id::text AS "merchantId",
              json_build_object('id', p.id, 'state', p.state, 'protocol', p.protocol, 'rail', p.rail, 'network', p.network, 'asset', p.asset,
                'payer', p.payer, 'payTo', p.pay_to, 'amount', p.amount::text, 'nonce', p.authorization_nonce, 'scheme', p.scheme,
                'challengeId', p.challenge_id, 'reference', p.reference, 'txHash', p.tx_hash, 'merchantId', p.merchant_id) AS payment
         FROM facilitator.payment_events e JOIN facilitator.payments p ON p.id = e.payment_id WHERE e.id = $1::bigint`,
      eventId,
    );
    const parsed = parsePaymentEventMessage({
      eventId,
      type: row.type,
      paymentId: row.paymentId,
      merchantId: row.merchantId,
      occurredAt: row.occurredAt.toISOString(),
      data: row.data,
      payment: row.payment,
    });
    if (!parsed.ok) throw new Error(parsed.reason);
    return parsed.message;
  }
});
