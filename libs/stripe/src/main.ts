import { startFakeStripe } from './fake-stripe.server';

/** Stripe sends an endpoint's events concurrently; 16 in flight keeps a local receiver busy without flooding it. */
const DEFAULT_WEBHOOK_CONCURRENCY = 16;

/**
 * Runs the fake Stripe API as a process. Environment:
 *   FAKE_STRIPE_HOST (default 127.0.0.1), FAKE_STRIPE_PORT (default 12111, stripe-mock's port),
 *   FAKE_STRIPE_WEBHOOK_URL + FAKE_STRIPE_WEBHOOK_SECRET (optional, both or neither): where events are delivered;
 *   FAKE_STRIPE_WEBHOOK_EVENTS (default `*`): the event types delivered there, comma-separated, as a Stripe
 *   endpoint's `enabled_events`;
 *   FAKE_STRIPE_WEBHOOK_CONCURRENCY (default 16): deliveries in flight at once, in no guaranteed order, as Stripe
 *   sends them (1: one at a time in creation order).
 * Point the SDK at it with `new Stripe('sk_test_…', { host, port, protocol: 'http' })`.
 */
async function main(): Promise<void> {
  const env = process.env;
  const port = Number(env.FAKE_STRIPE_PORT || 12111);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new Error(`FAKE_STRIPE_PORT must be a port number, got ${JSON.stringify(env.FAKE_STRIPE_PORT)}`);
  const webhookUrl = env.FAKE_STRIPE_WEBHOOK_URL || undefined;
  const webhookSecret = env.FAKE_STRIPE_WEBHOOK_SECRET || undefined;
  if (!webhookUrl !== !webhookSecret) throw new Error('set both FAKE_STRIPE_WEBHOOK_URL and FAKE_STRIPE_WEBHOOK_SECRET, or neither');
  const webhookEvents = (env.FAKE_STRIPE_WEBHOOK_EVENTS || '*')
    .split(',')
    .map((type) => type.trim())
    .filter(Boolean);
  const webhookConcurrency = Number(env.FAKE_STRIPE_WEBHOOK_CONCURRENCY || DEFAULT_WEBHOOK_CONCURRENCY);
  if (!Number.isInteger(webhookConcurrency) || webhookConcurrency < 1)
    throw new Error(`FAKE_STRIPE_WEBHOOK_CONCURRENCY must be a positive integer, got ${JSON.stringify(env.FAKE_STRIPE_WEBHOOK_CONCURRENCY)}`);

  const fake = await startFakeStripe({
    host: env.FAKE_STRIPE_HOST || '127.0.0.1',
    port,
    webhooks: webhookUrl && webhookSecret ? [{ url: webhookUrl, secret: webhookSecret, enabledEvents: webhookEvents }] : [],
    webhookConcurrency,
    log: (message) => console.error(message),
  });
  console.log(`fake-stripe listening on ${fake.url}${webhookUrl ? `, webhooks to ${webhookUrl}` : ''}`);

  const shutdown = () => {
    fake.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGTERM', shutdown);
  process.once('SIGINT', shutdown);
}

main().catch((error: unknown) => {
  console.error(`fake-stripe: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
