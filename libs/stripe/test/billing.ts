import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type Stripe from 'stripe';

/** Helpers for the Billing specs: the MPP Stripe subscription profile's calls (reference §1.3), and a webhook receiver. */

export interface Subscriber {
  customer: Stripe.Customer;
  paymentMethod: Stripe.PaymentMethod;
  price: Stripe.Price;
}

/** Customer (on `testClock` if given), the test card attached to it, and a monthly price: activation steps 1 to 3. */
export async function prepareSubscriber(
  stripe: Stripe,
  {
    card = 'pm_card_visa',
    testClock,
    unitAmount = 1500,
    interval = 'month',
    intervalCount = 1,
  }: {
    card?: string;
    testClock?: string;
    unitAmount?: number;
    interval?: 'day' | 'week' | 'month';
    intervalCount?: number;
  } = {},
): Promise<Subscriber> {
  const customer = await stripe.customers.create({ email: 'payer@example.com', metadata: { payer: 'p-1' }, ...(testClock && { test_clock: testClock }) });
  const paymentMethod = await stripe.paymentMethods.attach(card, { customer: customer.id });
  const price = await stripe.prices.create({
    currency: 'usd',
    unit_amount: unitAmount,
    recurring: { interval, interval_count: intervalCount },
    product_data: { name: 'Forecasts' },
  });
  return { customer, paymentMethod, price };
}

/** Step 4: the subscription exactly as the profile creates it. */
export function subscribe(stripe: Stripe, subscriber: Subscriber, options: Stripe.RequestOptions = {}) {
  return stripe.subscriptions.create(
    {
      customer: subscriber.customer.id,
      items: [{ price: subscriber.price.id, quantity: 1 }],
      default_payment_method: subscriber.paymentMethod.id,
      collection_method: 'charge_automatically',
      payment_behavior: 'error_if_incomplete',
      proration_behavior: 'none',
      expand: ['latest_invoice.payments'],
    },
    options,
  );
}

/** A webhook endpoint that accepts everything and keeps the raw bodies and signatures. */
export async function startWebhookReceiver() {
  const received: { body: string; signature: string }[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      received.push({ body: Buffer.concat(chunks).toString('utf8'), signature: String(req.headers['stripe-signature']) });
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/stripe/webhooks`,
    received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
