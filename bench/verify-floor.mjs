// The least a /verify of an x402 `exact` EVM payment can cost in Node on this machine, for bench/x402-facilitator.mjs
// --floor: a bare node:http server that does the work no verifier can skip and nothing else. Per request it reads and
// JSON-parses the body, hashes the EIP-712 digest, recovers the signer natively, compares payee, amount and time
// window, and simulates the transfer with one eth_call (calls of one event-loop turn share one JSON-RPC batch, as ours
// do). It uses our built libs/chain functions for the digest, the recovery and the calldata, so it is ours without
// the framework, the API key, zod, metrics, logs or the durable record: a ceiling to read our figure against, not a
// facilitator.
//
//   node bench/verify-floor.mjs --port 4525 --rpc-url http://127.0.0.1:8547 --chain-id 31337 --dist dist/apps/facilitator
import http from 'node:http';
import path from 'node:path';
import { createRequire } from 'node:module';
import { setImmediate } from 'node:timers';
import { parseArgs } from 'node:util';

const { values: opt } = parseArgs({
  options: {
    port: { type: 'string' },
    'rpc-url': { type: 'string' },
    'chain-id': { type: 'string' },
    dist: { type: 'string', default: 'dist/apps/facilitator' },
  },
});
const require = createRequire(import.meta.url);
const chain = require(path.resolve(opt.dist, 'libs/chain/src/index.js'));
const chainId = Number(opt['chain-id']);
const rpc = new URL(opt['rpc-url']);
const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });

let queued = [];
let rpcId = 0;
function ethCall(to, data) {
  return new Promise((resolve, reject) => {
    if (queued.length === 0) setImmediate(flush);
    queued.push({ request: { jsonrpc: '2.0', id: ++rpcId, method: 'eth_call', params: [{ to, data }, 'latest'] }, resolve, reject });
  });
}
function flush() {
  const calls = queued;
  queued = [];
  const body = JSON.stringify(calls.map((c) => c.request));
  const req = http.request(
    rpc,
    { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
    (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const byId = new Map(JSON.parse(Buffer.concat(chunks).toString('utf8')).map((a) => [a.id, a]));
        for (const c of calls) {
          const answer = byId.get(c.request.id);
          if (answer?.error) c.resolve(false);
          else if (answer) c.resolve(true);
          else c.reject(new Error('no answer'));
        }
      });
    },
  );
  req.on('error', (e) => calls.forEach((c) => c.reject(e)));
  req.end(body);
}

async function verify(body) {
  const { paymentPayload, paymentRequirements: r } = JSON.parse(body);
  const { authorization: a, signature } = paymentPayload.payload;
  const message = {
    from: a.from,
    to: a.to,
    value: BigInt(a.value),
    validAfter: BigInt(a.validAfter),
    validBefore: BigInt(a.validBefore),
    nonce: a.nonce,
  };
  const domain = { name: r.extra.name, version: r.extra.version, chainId, verifyingContract: r.asset };
  const signer = chain.recoverSigner(chain.transferWithAuthorizationDigest(domain, message), signature);
  if (signer?.toLowerCase() !== a.from.toLowerCase()) return { isValid: false, invalidReason: 'invalid_signature' };
  if (a.to.toLowerCase() !== r.payTo.toLowerCase()) return { isValid: false, invalidReason: 'recipient_mismatch' };
  const now = BigInt(Math.floor(Date.now() / 1000));
  if (message.validBefore < now + 6n || message.validAfter > now) return { isValid: false, invalidReason: 'invalid_time' };
  if (message.value !== BigInt(r.amount)) return { isValid: false, invalidReason: 'value_mismatch' };
  if (!(await ethCall(r.asset, chain.transferWithAuthorizationCalldata(message, signature)))) {
    return { isValid: false, invalidReason: 'simulation_failed' };
  }
  return { isValid: true, payer: a.from };
}

const server = http.createServer((req, res) => {
  const answer = (status, value) => {
    const text = JSON.stringify(value);
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
  };
  if (req.method === 'GET' && req.url === '/ready') return answer(200, { ok: true });
  if (req.method !== 'POST' || req.url !== '/verify') return answer(404, { error: 'not found' });
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () =>
    verify(Buffer.concat(chunks).toString('utf8')).then(
      (v) => answer(200, v),
      (e) => answer(400, { error: String(e?.message ?? e) }),
    ),
  );
});
server.keepAliveTimeout = 60_000;
server.listen(Number(opt.port), '127.0.0.1');
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => process.exit(0));
