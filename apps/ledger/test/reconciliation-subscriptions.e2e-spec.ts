import { randomBytes, randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import type Stripe from 'stripe';
import { createWalletClient, defineChain, erc20Abi, http, type Address, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { PAYMENT_EVENTS_QUEUE, type PaymentEventMessage, type PaymentSnapshot } from '@mp/clients';
import type { ReconRowJson } from '@mp/reconciliation';
import { payerAccount, testChain } from '../../../test/support/chain';
import { until } from '../../../test/support/webhook-receiver';
import { ReconMerchant, startReconWorld, type ReconWorld } from './support/recon-world';
import { chargePayment, eventId, events, newSubscriptionId, type SubscriptionTerms } from './support/subscriptions-world';

/**
 * Reconciliation of subscriptions and refunds (issue 13, item 7) over the real parts: subscription charges paid on
 * anvil and booked from the facilitator's events (published on the ledger's payment-events queue as the relay does),
 * refunds made on anvil from a refund wallet, Stripe subscriptions whose invoices the fake Stripe collects (read with
 * the official SDK), and runs done by the BullMQ worker. Each break kind of subscriptions and refunds is injected once.
 */
describe('reconciliation of subscription charges and refunds', () => {
  const period = { from: new Date(Date.now() - 60_000), to: new Date(Date.now() + 10 * 60_000) };
  const { manifest, client } = testChain();
  const chain = defineChain({
    id: manifest.chainId,
    name: 'anvil',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [manifest.rpcUrl] } },
  });
  const subscriber = payerAccount(manifest, 9);
  // the merchant's refund wallet: refunds go from it back to the payer. A fresh account (funded below): every transfer
  // out of it is this spec's, where a shared test account's would be other specs' transfers on the shared chain
  const refundWallet = privateKeyToAccount(generatePrivateKey());

  let world: ReconWorld;
  let merchant: ReconMerchant;
  let queue: Queue;

  beforeAll(async () => {
    world = await startReconWorld({ RECON_BLOCK_RANGE: '5' });
    const funder = createWalletClient({ account: payerAccount(manifest, 5), chain, transport: http(manifest.rpcUrl) });
    await client.waitForTransactionReceipt({ hash: await funder.sendTransaction({ to: refundWallet.address, value: 10n ** 18n }) });
    await transfer(payerAccount(manifest, 5), refundWallet.address, 1_000_000n);
    merchant = await ReconMerchant.create(world, 'reconciliation of subscriptions');
    queue = new Queue(PAYMENT_EVENTS_QUEUE, { connection: { url: world.facilitator.config.redisUrl }, prefix: world.facilitator.config.queuePrefix });
  });
  afterAll(async () => {
    await queue?.close();
    await world?.close();
  });

  /** Publishes the events as the facilitator's relay does and waits until the ledger has taken each. */
  const deliver = async (...messages: PaymentEventMessage[]) => {
    for (const message of messages) {
      const job = await queue.add(message.type, message, {
        jobId: `event-${message.eventId}-${message.paymentId}`,
        attempts: 20,
        backoff: { type: 'fixed', delay: 50 },
      });
      await until(`${message.type} taken`, async () => {
        const state = await job.getState();
        if (state === 'failed') throw new Error(`${message.type}: ${(await queue.getJob(job.id!))?.failedReason}`);
        return state === 'completed' ? true : undefined;
      });
    }
  };

  /** An event of the contract built by hand, where subscriptions-world's builders make up what the chain or Stripe must say. */
  const event = (type: PaymentEventMessage['type'], payment: PaymentSnapshot, data: unknown): PaymentEventMessage =>
    ({
      eventId: eventId(),
      type,
      paymentId: payment.id,
      merchantId: payment.merchantId,
      occurredAt: new Date().toISOString(),
      data,
      payment,
    }) as PaymentEventMessage;

  /** A real ERC-20 transfer on anvil: its transaction hash. */
  const transfer = async (from: typeof subscriber, to: Address, amount: bigint): Promise<Hex> => {
    const wallet = createWalletClient({ account: from, chain, transport: http(manifest.rpcUrl) });
    const hash = await wallet.writeContract({ address: manifest.tokens.usdc.address as Address, abi: erc20Abi, functionName: 'transfer', args: [to, amount] });
    await client.waitForTransactionReceipt({ hash });
    return hash;
  };

  const refunded = (payment: PaymentSnapshot, amount: bigint, reference: string) =>
    event(
      'payment.refunded',
      { ...payment, state: 'confirmed' },
      {
        refundId: randomUUID(),
        amount: amount.toString(),
        reason: 'customer_request',
        idempotencyKey: randomUUID(),
        refundTo: null,
        reference,
      },
    );

  /** A Stripe subscription of the merchant (its id in the metadata, as the facilitator's profile sets it), first invoice collected. */
  const stripeSubscription = async (card: string, unitAmount: number) => {
    const stripe = world.stripe.buyer;
    const customer = await stripe.customers.create({ email: 'payer@example.com' });
    const paymentMethod = await stripe.paymentMethods.attach(card, { customer: customer.id });
    const price = await stripe.prices.create({
      currency: 'usd',
      unit_amount: unitAmount,
      recurring: { interval: 'month' },
      product_data: { name: 'Forecasts' },
    });
    const subscription = await stripe.subscriptions.create({
      customer: customer.id,
      items: [{ price: price.id, quantity: 1 }],
      default_payment_method: paymentMethod.id,
      collection_method: 'charge_automatically',
      payment_behavior: 'allow_incomplete',
      proration_behavior: 'none',
      metadata: { merchant_id: merchant.merchantId },
      expand: ['latest_invoice.payments'],
    });
    const invoice = subscription.latest_invoice as Stripe.Invoice;
    return { subscription, invoice, paymentIntent: invoice.payments?.data[0]?.payment.payment_intent as string | undefined };
  };

  const rowsOf = async (id: string): Promise<ReconRowJson[]> => (await merchant.api('GET', `/reconciliations/${id}/rows?limit=200`)).body.data;
  const found = (rows: ReconRowJson[]) => rows.filter((r) => r.kind !== 'matched').map((r) => [r.kind, r.source, r.entryKind, r.reference]);

  const refs: Record<string, string> = {};
  let run: any;

  it('matches charges per period and refunds against the chain and Stripe, and reports each break of theirs once', async () => {
    // An EVM subscription, daily: period 0 paid at activation, period 1 failed once then paid on retry.
    const terms: SubscriptionTerms = {
      subscriptionId: newSubscriptionId(),
      merchantId: merchant.merchantId,
      payer: subscriber.address.toLowerCase(),
      payTo: merchant.payTo.toLowerCase(),
      amount: '50000',
      asset: manifest.tokens.usdc.address.toLowerCase(),
      network: manifest.network,
      periodUnit: 'day',
      periodCount: 1,
      anchor: new Date(),
    };
    refs.evmSubscription = terms.subscriptionId;
    const now = () => new Date();
    const p0 = chargePayment(terms, 0, 0);
    refs.p0 = await transfer(subscriber, merchant.payTo, 50_000n);
    await deliver(events.activated(terms, p0, now()), events.verified(p0, now()), events.confirmed(p0, now(), refs.p0));
    const p1 = chargePayment(terms, 1, 0);
    await deliver(events.verified(p1, now()), events.failed(p1, now(), 'insufficient_funds'));
    const p1Retry = chargePayment(terms, 1, 1);
    refs.p1 = await transfer(subscriber, merchant.payTo, 50_000n);
    await deliver(events.verified(p1Retry, now()), events.confirmed(p1Retry, now(), refs.p1));
    // the payer withdraws the grant on chain: the subscription is canceled at period end
    await deliver(events.revoked(terms, p1Retry, now()));

    // EVM refunds of period 0's charge from the refund wallet: one as booked, one booked with the wrong amount, one booked
    // that never reached the chain, and one the wallet made that nobody booked (a refund made outside the facilitator)
    refs.refund = await transfer(refundWallet, subscriber.address, 20_000n);
    refs.misbookedRefund = await transfer(refundWallet, subscriber.address, 10_000n);
    refs.phantomRefund = `0x${randomBytes(32).toString('hex')}`;
    await deliver(refunded(p0, 20_000n, refs.refund), refunded(p0, 12_000n, refs.misbookedRefund), refunded(p0, 5_000n, refs.phantomRefund));
    refs.unbookedRefund = await transfer(refundWallet, subscriber.address, 3_000n);

    // A Stripe subscription whose first invoice is paid and booked as its period 0 charge, with a refund of its invoice's
    // PaymentIntent carrying the merchant's id, booked too
    const paid = await stripeSubscription('pm_card_visa', 1500);
    refs.invoice = paid.invoice.id!;
    refs.invoiceIntent = paid.paymentIntent!;
    const stripeTerms: SubscriptionTerms = {
      ...terms,
      subscriptionId: newSubscriptionId(),
      method: 'stripe',
      network: 'stripe',
      asset: 'usd',
      amount: '1500',
      periodUnit: 'month',
      anchor: new Date(paid.subscription.start_date * 1000),
      authorizedPeriods: null,
    };
    refs.stripeSubscription = stripeTerms.subscriptionId;
    const s0 = chargePayment(stripeTerms, 0, 0);
    await deliver(
      events.activated(stripeTerms, s0, now()),
      events.verified(s0, now()),
      // booked under the PaymentIntent that paid the invoice, as the facilitator's stripe profile does (the ledger looks
      // its fee up by it)
      event('payment.confirmed', { ...s0, state: 'confirmed', reference: paid.paymentIntent! }, { reference: paid.paymentIntent!, via: 'settle' }),
    );
    const invoiceRefund = await world.stripe.buyer.refunds.create({
      payment_intent: paid.paymentIntent!,
      amount: 500,
      metadata: { merchant_id: merchant.merchantId },
    });
    refs.invoiceRefund = invoiceRefund.id;
    await deliver(refunded(s0, 500n, invoiceRefund.id));
    // a paid invoice the ledger never booked
    const unbooked = await stripeSubscription('pm_card_visa', 900);
    refs.unbookedInvoice = unbooked.invoice.id!;
    refs.unbookedInvoiceIntent = unbooked.paymentIntent!;
    // a charge booked for an invoice Stripe could not collect (it stays open)
    const unpaid = await stripeSubscription('pm_card_chargeCustomerFail', 700);
    expect(unpaid.invoice.status).toBe('open');
    refs.unpaidInvoice = unpaid.invoice.id!;
    const u0 = chargePayment({ ...stripeTerms, subscriptionId: newSubscriptionId(), amount: '700' }, 0, 0);
    await deliver(
      events.activated({ ...stripeTerms, subscriptionId: u0.subscription!.id, amount: '700' }, u0, now()),
      events.verified(u0, now()),
      event('payment.confirmed', { ...u0, state: 'confirmed', reference: refs.unpaidInvoice }, { reference: refs.unpaidInvoice, via: 'settle' }),
    );

    // An MPP payment through Stripe refunded at Stripe (booked), and refunded once more in the ledger alone: more than captured
    const { paymentIntent } = await merchant.payWithStripe('1000');
    refs.paymentIntent = paymentIntent;
    refs.stripeRefund = (await world.stripe.buyer.refunds.create({ payment_intent: paymentIntent, amount: 600 })).id;
    refs.stripeRefundBooking = await merchant.book({ asset: world.USD, code: 'refund', reference: refs.stripeRefund, amount: 600n });
    refs.overRefundBooking = await merchant.book({ asset: world.USD, code: 'refund', reference: paymentIntent, amount: 500n });

    run = await merchant.reconcile(period);
    expect(run).toMatchObject({ status: 'completed', error: null });
    expect(run.summary.scope.reconciled).toEqual(['chain/payment', 'chain/refund', 'stripe/payment', 'stripe/refund', 'stripe/fee']);
    const rows = await rowsOf(run.id);
    expect(found(rows)).toEqual(
      expect.arrayContaining([
        ['amount_mismatch', 'chain', 'refund', `${refs.misbookedRefund}:0`],
        ['missing_externally', 'chain', 'refund', refs.phantomRefund],
        ['missing_in_ledger', 'chain', 'refund', expect.stringMatching(new RegExp(`^${refs.unbookedRefund}:\\d+$`))],
        ['missing_in_ledger', 'stripe', 'payment', refs.unbookedInvoiceIntent],
        ['missing_in_ledger', 'stripe', 'fee', expect.stringMatching(/^txn_/)],
        ['missing_externally', 'stripe', 'payment', refs.unpaidInvoice],
        ['missing_externally', 'stripe', 'refund', paymentIntent],
        ['over_refund', 'stripe', 'refund', paymentIntent],
      ]),
    );
    expect(found(rows)).toHaveLength(8);
    expect(run.summary).toMatchObject({
      breaks: 8,
      counts: { missing_in_ledger: 3, missing_externally: 3, amount_mismatch: 1, duplicate: 0, over_refund: 1 },
    });

    // the charges per period, matched against the chain and the paid invoice, carry their subscription and period
    const charge = (reference: string) => rows.find((r) => r.kind === 'matched' && r.ledger?.reference === reference);
    expect(charge(refs.p0.toLowerCase())).toMatchObject({
      source: 'chain',
      ledger: { subscription: { id: terms.subscriptionId, periodIndex: 0, attempt: 0 } },
    });
    expect(charge(refs.p1.toLowerCase())).toMatchObject({ ledger: { subscription: { id: terms.subscriptionId, periodIndex: 1, attempt: 1 } } });
    expect(charge(refs.invoiceIntent)).toMatchObject({
      source: 'stripe',
      reference: refs.invoiceIntent,
      ledger: { amount: '1500', subscription: { id: stripeTerms.subscriptionId, periodIndex: 0, attempt: 0 } },
      external: { amount: '1500', details: { invoice: refs.invoice, status: 'paid', subscription: paid.subscription.id } },
    });
    // refunds matched: on chain (wallet to payer) and at Stripe (the invoice's PaymentIntent, by the refund's own merchant id)
    expect(rows.find((r) => r.kind === 'matched' && r.entryKind === 'refund' && r.source === 'chain')).toMatchObject({
      reference: `${refs.refund}:0`,
      ledger: { amount: '20000' },
      external: { amount: '20000', details: { from: refundWallet.address.toLowerCase(), to: subscriber.address.toLowerCase() } },
    });
    expect(rows.find((r) => r.reference === refs.invoiceRefund)).toMatchObject({
      kind: 'matched',
      external: { details: { refundOf: paid.paymentIntent, captured: '1500' } },
    });
    expect(rows.find((r) => r.kind === 'over_refund')).toMatchObject({
      captured: '1000',
      refunded: '1100',
      difference: '-100',
      refunds: [refs.overRefundBooking, refs.stripeRefundBooking].sort(),
    });
    expect(rows.find((r) => r.kind === 'amount_mismatch')).toMatchObject({ difference: '-2000' });

    // the failed attempt and the cancellation moved no money: shown, not breaks
    expect(run.summary.subscriptionEvents).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          subscriptionId: terms.subscriptionId,
          kind: 'charge_failed',
          periodIndex: 1,
          attempt: 0,
          amount: '50000',
          detail: 'insufficient_funds',
        }),
        expect.objectContaining({ subscriptionId: terms.subscriptionId, kind: 'cancel_requested' }),
      ]),
    );
  });

  it('shows the subscriptions section in the HTML report and the subscription columns in the CSV', async () => {
    const page = await merchant.api('GET', `/reconciliations/${run.id}/report`);
    expect(page.status).toBe(200);
    const html = String(page.body);
    expect(html).toContain('Subscriptions and refunds');
    expect(html.match(/<tr data-charge="matched">/g)).toHaveLength(3);
    expect(html).toContain('<tr data-charge="missing_in_ledger">');
    expect(html).toContain('<tr data-charge="missing_externally">');
    expect(html).toContain('<tr data-refund="over_refund">');
    expect(html).toContain('<tr data-event="charge_failed">');
    expect(html).toContain('<tr data-event="cancel_requested">');
    expect(html).toContain(refs.evmSubscription);
    expect(html).toContain('11 USD of 10 USD captured');

    const csv = await merchant.api('GET', `/reconciliations/${run.id}.csv`);
    const lines = String(csv.body).split('\r\n');
    expect(lines[0]).toContain(',subscription_id,subscription_period,subscription_attempt,captured,refunded');
    // The CSV defuses a cell a spreadsheet would run as a formula, and a random subscription id may start with '-'.
    const subscriptionCell = /^[=+\-@]/.test(refs.stripeSubscription) ? `'${refs.stripeSubscription}` : refs.stripeSubscription;
    expect(lines.find((l) => l.includes(refs.invoiceIntent) && l.startsWith('matched') && l.includes(',payment,'))).toContain(`,${subscriptionCell},0,0,,`);
  });

  it('is clean once the breaks are resolved by bookings and correcting transfers', async () => {
    const { USDC, USD } = world;
    const rows = await rowsOf(run.id);
    const ledgerId = (kind: string, reference: string) => rows.find((r) => r.kind === kind && r.reference.startsWith(reference))!.ledger!.id;
    await merchant.book({ asset: USDC, code: 'correction', reference: ledgerId('amount_mismatch', refs.misbookedRefund), amount: 2_000n, direction: 'in' });
    await merchant.book({ asset: USDC, code: 'correction', reference: ledgerId('missing_externally', refs.phantomRefund), amount: 5_000n, direction: 'in' });
    const unbooked = rows.find((r) => r.kind === 'missing_in_ledger' && r.source === 'chain')!;
    await merchant.book({ asset: USDC, code: 'refund', reference: unbooked.reference, amount: 3_000n });
    await merchant.book({ asset: USD, code: 'payment', reference: refs.unbookedInvoice, amount: 900n });
    const unbookedFee = rows.find((r) => r.kind === 'missing_in_ledger' && r.entryKind === 'fee')!;
    await merchant.book({ asset: USD, code: 'fee', reference: unbookedFee.reference, amount: BigInt(unbookedFee.external!.amount) });
    await merchant.book({ asset: USD, code: 'correction', reference: ledgerId('missing_externally', refs.unpaidInvoice), amount: 700n, direction: 'out' });
    await merchant.book({ asset: USD, code: 'correction', reference: refs.overRefundBooking, amount: 500n, direction: 'in' });

    const clean = await merchant.reconcile(period);
    expect(clean.summary).toMatchObject({ breaks: 0 });
    expect(clean.totals.map((t: any) => t.difference)).toEqual(['0', '0']);
  });
});
