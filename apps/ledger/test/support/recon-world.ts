import { randomUUID } from 'node:crypto';
import { Mppx } from 'mppx/client';
import { createWalletClient, defineChain, erc20Abi, http, type Address, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { chartAccountId, TransferCode } from '@mp/ledger';
import { chainAsset, stripeAsset, type ReconRowJson } from '@mp/reconciliation';
import { payerAccount, signAuthorization, testChain, v2Body, v2Requirements } from '../../../../test/support/chain';
import { startFacilitator, type RunningFacilitator } from '../../../../test/support/facilitator';
import { call, type Answer } from '../../../../test/support/http';
import { createMerchant, type TestMerchant } from '../../../../test/support/merchants';
import { paymentRequiredResponse } from '../../../../test/support/mpp';
import { startTestStripe, type TestStripe } from '../../../../test/support/stripe';
import { startWebhookReceiver, until, type WebhookReceiver } from '../../../../test/support/webhook-receiver';
import { startLedger, type RunningLedger } from '../../../../test/support/ledger-app';

/**
 * Reconciliation's world for e2e specs, all real: anvil, the fake Stripe (read through the official SDK), the
 * facilitator settling payments and delivering webhooks, and the ledger booking them from its events, with merchants
 * made by the merchants CLI and a webhook endpoint receiving what the facilitator signs.
 */
export interface ReconWorld {
  manifest: ReturnType<typeof testChain>['manifest'];
  /** `eip155:<id>/<usdc>` and `stripe/usd` */
  USDC: string;
  USD: string;
  stripe: TestStripe;
  facilitator: RunningFacilitator;
  ledger: RunningLedger;
  receiver: WebhookReceiver;
  close(): Promise<void>;
}

export async function startReconWorld(ledgerEnv: Record<string, string> = {}): Promise<ReconWorld> {
  const { manifest } = testChain();
  const receiver = await startWebhookReceiver();
  const stripe = await startTestStripe();
  const facilitator = await startFacilitator({ ...stripe.facilitatorEnv, OUTBOX_POLL_MS: '20', WEBHOOK_POLL_MS: '50' });
  const ledger = await startLedger({
    STRIPE_SECRET_KEY: 'sk_test_ledger_reader',
    STRIPE_API_BASE: stripe.fake.url,
    LEDGER_INGEST: 'true',
    FACILITATOR_URL: facilitator.url,
    RECON_CHAIN_RPC_URLS: `${manifest.network}=${manifest.rpcUrl}`,
    RECON_PENDING_WINDOW_MS: '0',
    // the ledger's break notices reach the facilitator's webhook delivery on the same queues
    QUEUE_PREFIX: facilitator.config.queuePrefix,
    ...ledgerEnv,
  });
  return {
    manifest,
    USDC: chainAsset(manifest.network, manifest.tokens.usdc.address),
    USD: stripeAsset('usd'),
    stripe,
    facilitator,
    ledger,
    receiver,
    close: async () => {
      await ledger.close();
      await facilitator.close();
      await stripe.fake.stop();
      receiver.close();
    },
  };
}

/** A merchant of the world: its key, its receiving address on anvil, and what it does through the real parts. */
export class ReconMerchant {
  readonly payTo: Address = privateKeyToAccount(generatePrivateKey()).address;
  private readonly chain;

  private constructor(
    private readonly world: ReconWorld,
    readonly merchant: TestMerchant,
  ) {
    const { manifest } = world;
    this.chain = defineChain({
      id: manifest.chainId,
      name: 'anvil',
      nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
      rpcUrls: { default: { http: [manifest.rpcUrl] } },
    });
  }

  /** Made by the merchants CLI, with its webhook (if any) and its receiving address declared to the facilitator. */
  static async create(world: ReconWorld, name: string, webhookUrl?: string): Promise<ReconMerchant> {
    const made = new ReconMerchant(world, createMerchant(name, webhookUrl));
    const declared = await call(`${world.facilitator.url}/merchants/me/receiving-addresses`, {
      key: made.apiKey,
      body: { network: world.manifest.network, address: made.payTo },
    });
    if (declared.status !== 201) throw new Error(`declaring ${made.payTo}: ${declared.status} ${JSON.stringify(declared.body)}`);
    return made;
  }

  get merchantId(): string {
    return this.merchant.merchantId;
  }

  get apiKey(): string {
    return this.merchant.apiKey;
  }

  /** The ledger's API with this merchant's key. */
  api(method: 'GET' | 'POST', path: string, body?: unknown): Promise<Answer> {
    return call(`${this.world.ledger.url}${path}`, { method, key: this.apiKey, ...(body !== undefined && { body }) });
  }

  /** An x402 payment the facilitator settles to the merchant's address; resolves once the ledger has posted it. */
  async settle(amount: bigint, payerIndex: number): Promise<{ txHash: Hex }> {
    const { manifest, facilitator } = this.world;
    const usdc = manifest.tokens.usdc;
    const before = await this.revenue(this.world.USDC);
    const payload = await signAuthorization(payerAccount(manifest, payerIndex), usdc, manifest.chainId, { to: this.payTo, value: amount });
    const answer = await call(`${facilitator.url}/settle`, {
      method: 'POST',
      key: this.apiKey,
      body: v2Body(payload, v2Requirements(manifest, usdc, amount, { payTo: this.payTo })),
    });
    if (answer.body.success !== true) throw new Error(`settle: ${JSON.stringify(answer.body)}`);
    await until('the settlement booked', async () => ((await this.revenue(this.world.USDC)) >= before + amount ? true : undefined));
    return { txHash: answer.body.transaction };
  }

  /** An MPP payment through Stripe (a Shared Payment Token from the official mppx client); resolves once the ledger has its fee. */
  async payWithStripe(amount: string): Promise<{ paymentIntent: string }> {
    const { facilitator, stripe, USD } = this.world;
    const fees = async () =>
      (
        await this.world.ledger.db.$queryRawUnsafe<{ n: number }[]>(
          `SELECT count(*)::int AS n FROM ledger.transfers WHERE merchant_id = $1::uuid AND code = ${TransferCode.fee} AND asset = $2`,
          this.merchantId,
          USD,
        )
      )[0].n;
    const [revenueBefore, feesBefore] = [await this.revenue(USD), await fees()];
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
    const issued = await call(`${facilitator.url}/mpp/challenges`, { method: 'POST', key: this.apiKey, body: terms });
    const credential = await Mppx.create({ methods: [stripe.mppxMethod()], polyfill: false }).createCredential(
      paymentRequiredResponse(issued.body.wwwAuthenticate),
    );
    const settled = await call(`${facilitator.url}/mpp/settle`, { method: 'POST', key: this.apiKey, body: { credential, terms } });
    if (settled.status !== 200) throw new Error(`mpp settle: ${settled.status} ${JSON.stringify(settled.body)}`);
    const paymentIntent: string = settled.body.receipt.reference;
    await until('the Stripe payment and its fee booked', async () =>
      (await this.revenue(USD)) >= revenueBefore + BigInt(amount) && (await fees()) > feesBefore ? true : undefined,
    );
    return { paymentIntent };
  }

  /** A plain ERC-20 transfer from a payer to the merchant's address: the reference of its Transfer log. */
  async transfer(amount: bigint, payerIndex: number): Promise<{ reference: string; hash: Hex; from: Address }> {
    const { manifest } = this.world;
    const { client } = testChain();
    const payer = createWalletClient({ account: payerAccount(manifest, payerIndex), chain: this.chain, transport: http(manifest.rpcUrl) });
    const usdc = manifest.tokens.usdc.address as Address;
    const hash = await payer.writeContract({ address: usdc, abi: erc20Abi, functionName: 'transfer', args: [this.payTo, amount] });
    const receipt = await client.waitForTransactionReceipt({ hash });
    const log = receipt.logs.find((l) => l.address.toLowerCase() === usdc.toLowerCase())!;
    return { reference: `${hash}:${log.logIndex}`, hash, from: payer.account.address };
  }

  /**
   * One transfer booked through the ledger's API, as a merchant's own books would: money in (a payment, or a
   * correction adding to one) credits revenue, money out (a refund, or a correction taking away) debits it.
   */
  async book(fields: {
    asset: string;
    code: 'payment' | 'refund' | 'fee' | 'correction';
    amount: bigint;
    reference: string;
    direction?: 'in' | 'out';
  }): Promise<string> {
    const id = randomUUID();
    const out = fields.direction === 'out' || (fields.direction === undefined && (fields.code === 'refund' || fields.code === 'fee'));
    const [revenue, clearing] = [chartAccountId('revenue', fields.asset), chartAccountId('payerClearing', fields.asset)];
    const booked = await this.api('POST', '/transfers', [
      {
        id,
        debitAccountId: out ? revenue : clearing,
        creditAccountId: out ? clearing : revenue,
        amount: fields.amount.toString(),
        asset: fields.asset,
        code: TransferCode[fields.code],
        reference: fields.reference,
      },
    ]);
    if (booked.body.results?.[0]?.result !== 'created')
      throw new Error(`booking ${JSON.stringify(fields, (_, v) => (typeof v === 'bigint' ? String(v) : v))}: ${JSON.stringify(booked.body)}`);
    return id;
  }

  /** Starts a run over HTTP and waits for the worker to finish it. */
  async reconcile(period: { from: Date; to: Date }): Promise<any> {
    const started = await this.api('POST', '/reconciliations', { from: period.from.toISOString(), to: period.to.toISOString() });
    if (started.status !== 202) throw new Error(`POST /reconciliations: ${started.status} ${JSON.stringify(started.body)}`);
    return this.finished(started.body.id);
  }

  async finished(id: string): Promise<any> {
    return until(
      `run ${id} finished`,
      async () => {
        const run = await this.api('GET', `/reconciliations/${id}`);
        return run.body.status === 'completed' || run.body.status === 'failed' ? run.body : undefined;
      },
      60_000,
    );
  }

  async breaksOf(id: string): Promise<ReconRowJson[]> {
    return (await this.api('GET', `/reconciliations/${id}/rows?kind=breaks`)).body.data;
  }

  /** Credits posted minus debits posted on the merchant's revenue account of `asset` (0 while there is none). */
  private async revenue(asset: string): Promise<bigint> {
    const [account] = await this.world.ledger.ledger.lookupAccounts(this.merchantId, [chartAccountId('revenue', asset)]);
    return account ? account.creditsPosted : 0n;
  }
}
