import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startFixture } from '../test/fixture';

const SECRET = 'whsec_concurrency_secret';

/**
 * An endpoint that holds every request until `release()`, answering 500 the first time it sees `failOnce`'s event id.
 * It records the most requests it held at once and each event id it accepted.
 */
async function startHoldingReceiver() {
  const accepted: string[] = [];
  const held: (() => void)[] = [];
  let failOnce: string | undefined;
  let mostHeld = 0;
  let released = false;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const answer = () => {
        const id = (JSON.parse(body) as { id: string }).id;
        if (id === failOnce) {
          failOnce = undefined;
          return void res.writeHead(500).end('not now');
        }
        accepted.push(id);
        res.writeHead(200).end('ok');
      };
      if (released) return answer();
      held.push(answer);
      mostHeld = Math.max(mostHeld, held.length);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/stripe/webhooks`,
    accepted,
    heldCount: () => held.length,
    mostHeld: () => mostHeld,
    failOnceFor: (id: string) => void (failOnce = id),
    release: () => {
      released = true;
      for (const answer of held.splice(0)) answer();
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('webhooks delivered concurrently', () => {
  it('keeps up to `webhookConcurrency` events in flight, retries a failed one on its own, and delivers each event once', async () => {
    const receiver = await startHoldingReceiver();
    const f = await startFixture({ webhooks: [{ url: receiver.url, secret: SECRET }], webhookConcurrency: 4, webhookRetryDelaysMs: [5, 5] });
    try {
      for (let i = 0; i < 6; i++) await f.stripe.customers.create({ email: `c${i}@example.com` });
      const events = f.fake.events();
      expect(events).toHaveLength(6);
      // four requests arrive while none is answered: they are in flight together, the rest wait for a free slot
      await vi.waitFor(() => expect(receiver.heldCount()).toBe(4));
      receiver.failOnceFor(events[0]!.id);
      receiver.release();
      await f.fake.drainWebhooks();

      expect(receiver.mostHeld()).toBe(4);
      // the failed first event was retried after later ones went through: no ordering, and nothing lost or doubled
      expect([...receiver.accepted].sort()).toEqual(events.map((event) => event.id).sort());
      expect(receiver.accepted.indexOf(events[0]!.id)).toBeGreaterThan(0);
    } finally {
      await f.fake.stop();
      await receiver.close();
    }
  });

  it("sends an endpoint only its enabled events (Stripe's enabled_events)", async () => {
    const receiver = await startHoldingReceiver();
    receiver.release();
    const f = await startFixture({
      webhooks: [{ url: receiver.url, secret: SECRET, enabledEvents: ['payment_intent.created'] }],
      webhookConcurrency: 4,
    });
    try {
      await f.stripe.customers.create({ email: 'only@example.com' });
      await f.stripe.paymentIntents.create({ amount: 100, currency: 'usd' });
      await f.fake.drainWebhooks();
      const [customerCreated, intentCreated] = f.fake.events();
      expect(receiver.accepted).toEqual([intentCreated!.id]);
      expect([customerCreated!.pending_webhooks, intentCreated!.pending_webhooks]).toEqual([0, 1]);
    } finally {
      await f.fake.stop();
      await receiver.close();
    }
  });

  it('refuses a concurrency that is not a positive integer', async () => {
    await expect(startFixture({ webhookConcurrency: 0 })).rejects.toThrow(/concurrency/);
  });
});
