import { createServer, type IncomingHttpHeaders } from 'node:http';

export interface ReceivedWebhook {
  headers: IncomingHttpHeaders;
  body: string;
  /** the status it was answered with */
  answered: number;
}

export interface WebhookReceiver {
  url: string;
  received: ReceivedWebhook[];
  close(): void;
}

/**
 * A merchant's webhook endpoint on 127.0.0.1: it answers 500 to the first `failures` attempts of each delivery (by
 * Webhook-Id), 204 after that, and keeps every request.
 */
export async function startWebhookReceiver(options: { failures?: number; onRequest?: () => Promise<void> } = {}): Promise<WebhookReceiver> {
  const received: ReceivedWebhook[] = [];
  const attempts = new Map<string, number>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      await options.onRequest?.();
      const id = String(req.headers['webhook-id']);
      const n = (attempts.get(id) ?? 0) + 1;
      attempts.set(id, n);
      const answered = n <= (options.failures ?? 0) ? 500 : 204;
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), answered });
      res.writeHead(answered).end(answered === 500 ? 'not yet' : undefined);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}/hooks?token=t0p`, received, close: () => server.close() };
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
