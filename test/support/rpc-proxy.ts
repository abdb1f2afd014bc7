import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/**
 * A JSON-RPC proxy in front of the test node that misbehaves the way real RPC endpoints do:
 * - `loseSendAnswers`: a send (`eth_sendRawTransaction` or `eth_sendRawTransactionSync`, alone or inside a batch)
 *   reaches the node, but its answer never comes back (the caller times out, the transaction is in the node's hands);
 * - `dropSends`: a send never reaches the node and its connection is cut (a node that lost the transaction: only
 *   broadcasting the same bytes again gets it mined);
 * - `receiptLagMs`: a lagging node: a mined transaction's receipt and the transaction itself are reported missing
 *   until this long after the proxy first saw them mined, and a synchronous send is answered as timed out (EIP-7966
 *   code 4: in the mempool, no receipt yet);
 * - `hold`: requests calling this method wait, unsent, until `release()`: the node answers them as the chain is
 *   then (a slow request, made deterministic);
 * - `refuse`: a node without this method: a call of it (alone or inside a batch) is answered JSON-RPC -32601, never sent on.
 * Counts what it did, so a test can prove the fault really happened.
 */
export interface RpcProxy {
  url: string;
  set(options: { loseSendAnswers?: boolean; dropSends?: boolean; receiptLagMs?: number; hold?: string | undefined; refuse?: string | undefined }): void;
  /** Sends the held requests on, and holds no more. */
  release(): void;
  stats: { sendsLost: number; sendsDropped: number; receiptsHidden: number; held: number; refused: number; methods: Record<string, number> };
  close(): Promise<void>;
}

const SENDS = new Set(['eth_sendRawTransaction', 'eth_sendRawTransactionSync']);

interface RpcCall {
  id: unknown;
  method: string;
  params?: unknown[];
}

export async function startRpcProxy(upstreamUrl: string): Promise<RpcProxy> {
  let loseSendAnswers = false;
  let dropSends = false;
  let receiptLagMs = 0;
  let hold: string | undefined;
  let refuse: string | undefined;
  const gate = () => {
    let open = () => {};
    const promise = new Promise<void>((resolve) => (open = resolve));
    return { promise, open };
  };
  let released = gate();
  const stats = { sendsLost: 0, sendsDropped: 0, receiptsHidden: 0, held: 0, refused: 0, methods: {} as Record<string, number> };
  const firstSeenMined = new Map<string, number>();
  const sockets = new Set<Socket>();

  const lagging = (hash: unknown): boolean => {
    if (receiptLagMs <= 0 || typeof hash !== 'string') return false;
    const key = hash.toLowerCase();
    const seen = firstSeenMined.get(key) ?? Date.now();
    firstSeenMined.set(key, seen);
    return Date.now() - seen < receiptLagMs;
  };

  /** Rewrites one answer as the lagging node would give it. */
  const lag = (call: RpcCall, answer: { id: unknown; result?: unknown }) => {
    const mined = answer.result && typeof answer.result === 'object' && (answer.result as { blockNumber?: unknown }).blockNumber;
    if ((call.method === 'eth_getTransactionReceipt' || call.method === 'eth_getTransactionByHash') && mined && lagging(call.params?.[0])) {
      stats.receiptsHidden += 1;
      return { ...answer, result: null };
    }
    const hash = mined && (answer.result as { transactionHash?: unknown }).transactionHash;
    if (call.method === 'eth_sendRawTransactionSync' && mined && lagging(hash)) {
      stats.receiptsHidden += 1;
      return { jsonrpc: '2.0', id: answer.id, error: { code: 4, message: `The transaction was added to the mempool but wasn't processed in 2s.`, data: hash } };
    }
    return answer;
  };

  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const request = JSON.parse(body) as RpcCall | RpcCall[];
      const calls = Array.isArray(request) ? request : [request];
      for (const call of calls) stats.methods[call.method] = (stats.methods[call.method] ?? 0) + 1;
      const refused = calls.filter((c) => c.method === refuse);
      if (refused.length) {
        stats.refused += refused.length;
        const error = { code: -32601, message: `the method ${refuse} does not exist/is not available` };
        const answers = refused.map((c) => ({ jsonrpc: '2.0', id: c.id, error }));
        const rest = calls.filter((c) => c.method !== refuse);
        if (rest.length) {
          const upstream = await fetch(upstreamUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(rest) });
          answers.push(...((await upstream.json()) as typeof answers));
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(Array.isArray(request) ? answers : answers[0]));
        return;
      }
      if (dropSends && calls.some((c) => SENDS.has(c.method))) {
        stats.sendsDropped += 1;
        res.destroy();
        return;
      }
      if (hold && calls.some((c) => c.method === hold)) {
        stats.held += 1;
        await released.promise;
      }
      let upstream: Response;
      try {
        upstream = await fetch(upstreamUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      } catch {
        res.destroy();
        return;
      }
      const text = await upstream.text();
      if (loseSendAnswers && calls.some((c) => SENDS.has(c.method))) {
        stats.sendsLost += 1;
        return; // the node acted; the caller never hears (its socket stays open until it gives up)
      }
      if (receiptLagMs <= 0) {
        res.writeHead(upstream.status, { 'content-type': 'application/json' }).end(text);
        return;
      }
      const answer = JSON.parse(text) as { id: unknown; result?: unknown } | { id: unknown; result?: unknown }[];
      const rewritten = Array.isArray(answer) ? answer.map((a) => lag(calls.find((c) => c.id === a.id) ?? { id: a.id, method: '' }, a)) : lag(calls[0], answer);
      res.writeHead(upstream.status, { 'content-type': 'application/json' }).end(JSON.stringify(rewritten));
    });
  });
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    stats,
    set(options) {
      if (options.loseSendAnswers !== undefined) loseSendAnswers = options.loseSendAnswers;
      if (options.dropSends !== undefined) dropSends = options.dropSends;
      if (options.receiptLagMs !== undefined) receiptLagMs = options.receiptLagMs;
      if ('hold' in options) hold = options.hold;
      if ('refuse' in options) refuse = options.refuse;
    },
    release() {
      hold = undefined;
      released.open();
      released = gate();
    },
    close: () =>
      new Promise((resolve) => {
        released.open();
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
