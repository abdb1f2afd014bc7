import { createServer, type IncomingHttpHeaders } from 'node:http';
import { Webhook } from 'standardwebhooks';

export interface ReceivedWebhook {
  headers: IncomingHttpHeaders;
  body: string;
  /** the status it was answered with */
  answered: number;
}

export interface WebhookReceiver {
  url: string;
  /** Every delivery, each verified. Reading it (or closing) throws once a delivery did not verify. */
  readonly received: ReceivedWebhook[];
  /** The merchant's webhook secret (`whsec_…`): every delivery must verify with it. Call before anything is sent. */
  verifyWith(secret: string): void;
  close(): void;
}

/**
 * A merchant's webhook endpoint on 127.0.0.1. It verifies every delivery as a merchant would, with the
 * `standardwebhooks` package (`new Webhook(secret).verify(body, headers)`): a delivery that does not verify is
 * answered 400 and fails the test that reads `received`. A verified one is answered 500 for the first `failures`
 * attempts of each delivery (by webhook-id), 204 after that.
 */
export async function startWebhookReceiver(options: { failures?: number; onRequest?: () => Promise<void> } = {}): Promise<WebhookReceiver> {
  const received: ReceivedWebhook[] = [];
  const unverified: string[] = [];
  const attempts = new Map<string, number>();
  let secret: string | undefined;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const id = String(req.headers['webhook-id']);
      try {
        if (!secret) throw new Error('no secret: call receiver.verifyWith(merchant.webhookSecret) before anything is sent');
        new Webhook(secret).verify(body, req.headers as Record<string, string>);
      } catch (error) {
        unverified.push(`delivery ${id} did not verify with standardwebhooks: ${(error as Error).message}`);
        res.writeHead(400).end('signature does not verify');
        return;
      }
      await options.onRequest?.();
      const n = (attempts.get(id) ?? 0) + 1;
      attempts.set(id, n);
      const answered = n <= (options.failures ?? 0) ? 500 : 204;
      received.push({ headers: req.headers, body, answered });
      res.writeHead(answered).end(answered === 500 ? 'not yet' : undefined);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  const checked = () => {
    if (unverified.length) throw new Error(`webhook receiver on port ${port}: ${unverified.join('; ')}`);
  };
  return {
    url: `http://127.0.0.1:${port}/hooks?token=t0p`,
    get received() {
      checked();
      return received;
    },
    verifyWith: (value) => {
      secret = value;
    },
    close: () => {
      server.close();
      checked();
    },
  };
}

/** Polls `probe` until it gives a value. */
export async function until<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
