// Load generator for bench/x402-facilitator.mjs, run in a worker thread so that nothing the main thread
// does (payload signing, chain reads, bookkeeping) delays a request or a latency stamp.
//
// Message in:  { id, cmd: 'run', origin, path, bodies: string[], concurrency, timeoutMs }
//              { id, cmd: 'close' }
// Message out: { id, ok: true, result } | { id, ok: false, error }
//   result = { wallMs, latencyMs: Float64Array, status: Int32Array (0 = no response), bodies: string[],
//              errors: (string|null)[], elu: { utilization, activeMs, idleMs } }
//
// One keep-alive agent per origin with maxSockets = concurrency; `concurrency` loops each take the next
// body and POST it; a request counts from just before http.request to the last byte of the response.
// Only 127.0.0.1 origins are accepted.
import http from 'node:http';
import { parentPort, isMainThread } from 'node:worker_threads';
import { performance } from 'node:perf_hooks';

if (isMainThread || !parentPort) throw new Error('load-worker.mjs runs only as a worker thread');

const agents = new Map();

function agentFor(origin, concurrency) {
  let agent = agents.get(origin);
  if (!agent || agent.maxSockets < concurrency) {
    agent?.destroy();
    agent = new http.Agent({ keepAlive: true, maxSockets: concurrency, maxFreeSockets: concurrency });
    agents.set(origin, agent);
  }
  return agent;
}

function post(url, agent, body, timeoutMs) {
  return new Promise((resolve) => {
    const started = performance.now();
    let settled = false;
    const done = (status, text, error) => {
      if (settled) return;
      settled = true;
      resolve({ latencyMs: performance.now() - started, status, text, error });
    };
    const req = http.request(
      url,
      {
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => done(res.statusCode ?? 0, Buffer.concat(chunks).toString('utf8'), null));
        res.on('error', (e) => done(res.statusCode ?? 0, Buffer.concat(chunks).toString('utf8'), e.message));
      },
    );
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', (e) => done(0, '', e.message));
    req.end(body);
  });
}

async function run({ origin, path, bodies, concurrency, timeoutMs }) {
  const url = new URL(path, origin);
  if (url.hostname !== '127.0.0.1') throw new Error(`refusing to send load to ${url.host}: 127.0.0.1 only`);
  const agent = agentFor(url.origin, concurrency);
  const n = bodies.length;
  const latencyMs = new Float64Array(n);
  const status = new Int32Array(n);
  const texts = new Array(n);
  const errors = new Array(n).fill(null);
  let next = 0;
  const elu0 = performance.eventLoopUtilization();
  const t0 = performance.now();
  const loop = async () => {
    for (;;) {
      const i = next++;
      if (i >= n) return;
      const r = await post(url, agent, bodies[i], timeoutMs);
      latencyMs[i] = r.latencyMs;
      status[i] = r.status;
      texts[i] = r.text;
      errors[i] = r.error;
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, n) }, loop));
  const wallMs = performance.now() - t0;
  const elu = performance.eventLoopUtilization(performance.eventLoopUtilization(), elu0);
  return {
    wallMs,
    latencyMs,
    status,
    bodies: texts,
    errors,
    elu: { utilization: elu.utilization, activeMs: elu.active, idleMs: elu.idle },
  };
}

parentPort.on('message', async (msg) => {
  try {
    if (msg.cmd === 'run') {
      const result = await run(msg);
      parentPort.postMessage({ id: msg.id, ok: true, result }, [result.latencyMs.buffer, result.status.buffer]);
    } else if (msg.cmd === 'close') {
      for (const agent of agents.values()) agent.destroy();
      agents.clear();
      parentPort.postMessage({ id: msg.id, ok: true, result: null });
    } else {
      throw new Error(`unknown command ${msg.cmd}`);
    }
  } catch (error) {
    parentPort.postMessage({ id: msg.id, ok: false, error: error instanceof Error ? error.message : String(error) });
  }
});
