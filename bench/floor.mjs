// The least an x402 `exact` EVM /verify and /settle can cost in Node on this machine, for bench/x402-facilitator.mjs
// --floor: a bare node:http server that does the work no facilitator can skip and nothing else.
//
// /verify reads and JSON-parses the body, hashes the EIP-712 digest, recovers the signer natively, compares payee,
// amount and time window, and simulates the transfer with one eth_call. /settle does the same, then signs the
// transferWithAuthorization transaction with one of its wallets (a local nonce; each wallet sends one transaction at a
// time, as ours do), sends it, and reads its receipt until it is there. JSON-RPC calls of one event-loop turn share
// one batch, as ours do. It uses our built libs/chain functions for the digest, the recovery, the calldata and the
// signature, so it is ours without the framework, the API key, zod, metrics, logs, the queue (Redis) or any recovery:
// a ceiling to read our figures against, not a facilitator. With --database-url it also keeps the least durable
// record exactly-once settlement needs, one statement each: the payment's row, unique per authorization, with its
// signed transaction, written before the broadcast, and its outcome after the receipt (schema bench_floor, made
// afresh at start).
//
//   node bench/floor.mjs --port 4525 --rpc-url http://127.0.0.1:8547 --chain-id 31337 --dist dist/apps/facilitator \
//        [--wallet-keys 0x…,0x…]   (settle only; wallets funded with native gas, used by nothing else)
//        [--database-url postgresql://…]   (settle only: the durable record)
//        [--batch 20 --multicall3 0x…]   (settle only: up to 20 transfers in one Multicall3 aggregate3 transaction,
//                                         sent when full or 20 ms after the first, as ours with SETTLE_BATCH_MAX)
import http from 'node:http';
import path from 'node:path';
import { createRequire } from 'node:module';
import { setImmediate } from 'node:timers';
import { parseArgs } from 'node:util';
import { encodeFunctionData, keccak256, toEventSelector } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import pg from 'pg';

const { values: opt } = parseArgs({
  options: {
    port: { type: 'string' },
    'rpc-url': { type: 'string' },
    'chain-id': { type: 'string' },
    dist: { type: 'string', default: 'dist/apps/facilitator' },
    'wallet-keys': { type: 'string', default: '' },
    'database-url': { type: 'string' },
    batch: { type: 'string', default: '1' },
    multicall3: { type: 'string' },
  },
});
const require = createRequire(import.meta.url);
const chain = require(path.resolve(opt.dist, 'libs/chain/src/index.js'));
const chainId = Number(opt['chain-id']);
const rpcUrl = new URL(opt['rpc-url']);
const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });

let queued = [];
let rpcId = 0;
/** One JSON-RPC call; the calls of one event-loop turn go in one batch. Rejects with the node's error. */
function rpc(method, params) {
  return new Promise((resolve, reject) => {
    if (queued.length === 0) setImmediate(flush);
    queued.push({ request: { jsonrpc: '2.0', id: ++rpcId, method, params }, resolve, reject });
  });
}
function flush() {
  const calls = queued;
  queued = [];
  const body = JSON.stringify(calls.map((c) => c.request));
  const req = http.request(
    rpcUrl,
    { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
    (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const byId = new Map(JSON.parse(Buffer.concat(chunks).toString('utf8')).map((a) => [a.id, a]));
        for (const c of calls) {
          const answer = byId.get(c.request.id);
          if (!answer) c.reject(new Error('no answer'));
          else if (answer.error) c.reject(new Error(answer.error.message));
          else c.resolve(answer.result);
        }
      });
    },
  );
  req.on('error', (e) => calls.forEach((c) => c.reject(e)));
  req.end(body);
}
const ethCall = (to, data) =>
  rpc('eth_call', [{ to, data }, 'latest']).then(
    () => true,
    () => false,
  );

/** The verify checks; with `settle`, also what the settlement transaction needs. */
async function check(body) {
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
  const calldata = chain.transferWithAuthorizationCalldata(message, signature);
  if (!(await ethCall(r.asset, calldata))) return { isValid: false, invalidReason: 'simulation_failed' };
  return { isValid: true, payer: a.from, nonce: a.nonce, asset: r.asset, calldata, network: r.network };
}

async function verify(body) {
  const { isValid, invalidReason, payer } = await check(body);
  return isValid ? { isValid, payer } : { isValid, invalidReason };
}

// transferWithAuthorization uses about 69,000 gas here; a fixed limit spares the estimate.
const SETTLE_GAS = 120_000n;
const wallets = opt['wallet-keys']
  .split(',')
  .filter(Boolean)
  .map((key) => ({ key: Buffer.from(key.slice(2), 'hex'), address: privateKeyToAccount(key).address, nonce: undefined, tail: Promise.resolve(), load: 0 }));
let fees;

const db = opt['database-url'] ? new pg.Pool({ connectionString: opt['database-url'], max: 8 }) : undefined;

/**
 * Signs and sends on the least busy wallet, one transaction at a time per wallet; the hash once the node took it.
 * `record` runs between the signature and the broadcast.
 */
function send(to, data, record, gas = SETTLE_GAS) {
  const wallet = wallets.reduce((a, b) => (b.load < a.load ? b : a));
  wallet.load += 1;
  const sent = wallet.tail.then(async () => {
    wallet.nonce ??= Number(await rpc('eth_getTransactionCount', [wallet.address, 'pending']));
    const raw = chain.signEip1559({ type: 'eip1559', chainId, nonce: wallet.nonce, to, data, gas, ...fees }, wallet.key);
    await record?.(raw);
    try {
      const hash = await rpc('eth_sendRawTransaction', [raw]);
      wallet.nonce += 1;
      return hash;
    } catch (error) {
      wallet.nonce = undefined;
      throw error;
    }
  });
  wallet.tail = sent.catch(() => undefined);
  return sent.finally(() => (wallet.load -= 1));
}

async function receipt(hash) {
  for (let wait = 1; ; wait = Math.min(wait * 2, 50)) {
    const found = await rpc('eth_getTransactionReceipt', [hash]);
    if (found) return found;
    await new Promise((resolve) => setTimeout(resolve, wait));
  }
}

/** A payment's key: its authorization (payer and nonce), as the durable record and a batch's receipt name it. */
const authorizationKey = (payer, nonce) => `${payer.toLowerCase()}:${nonce.toLowerCase()}`;

async function settle(body) {
  const checked = await check(body);
  if (!checked.isValid) return { success: false, errorReason: checked.invalidReason, transaction: '', network: checked.network };
  if (BATCH_MAX > 1) return settleInBatch(checked);
  const key = authorizationKey(checked.payer, checked.nonce);
  const record =
    db &&
    (async (raw) => {
      const inserted = await db.query('INSERT INTO bench_floor.payments (authorization_key, tx_hash, raw_tx) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING', [
        key,
        keccak256(raw),
        raw,
      ]);
      if (inserted.rowCount !== 1) throw new Error(`authorization ${key} is already on record`);
    });
  const hash = await send(checked.asset, checked.calldata, record);
  const mined = await receipt(hash);
  const success = mined.status === '0x1';
  await db?.query('UPDATE bench_floor.payments SET state = $2 WHERE authorization_key = $1', [key, success ? 'confirmed' : 'failed']);
  if (!success) return { success: false, errorReason: 'transaction_failed', transaction: hash, network: checked.network };
  return { success: true, transaction: hash, network: checked.network, payer: checked.payer };
}

// Batches (no durable record): up to BATCH_MAX transfers in one aggregate3 transaction, each allowed to fail alone; a
// transfer succeeded when the receipt logs its AuthorizationUsed (authorizer and nonce are its indexed topics).
const BATCH_MAX = Number(opt.batch);
const BATCH_WINDOW_MS = 20;
const AUTHORIZATION_USED = toEventSelector('AuthorizationUsed(address,bytes32)');
if (BATCH_MAX > 1 && opt['database-url']) throw new Error('--batch keeps no durable record: leave out --database-url');
let open;

function settleInBatch(checked) {
  return new Promise((resolve, reject) => {
    if (!open) {
      const batch = (open = { entries: [] });
      batch.timer = setTimeout(() => sendBatch(batch), BATCH_WINDOW_MS);
    }
    open.entries.push({ checked, resolve, reject });
    if (open.entries.length >= BATCH_MAX) {
      clearTimeout(open.timer);
      sendBatch(open);
    }
  });
}

async function sendBatch(batch) {
  if (open === batch) open = undefined;
  const { entries } = batch;
  try {
    const calls = entries.map((e) => ({ target: e.checked.asset, allowFailure: true, callData: e.checked.calldata }));
    const data = encodeFunctionData({ abi: chain.multicall3Abi, functionName: 'aggregate3', args: [calls] });
    const hash = await send(opt.multicall3, data, undefined, 50_000n + 80_000n * BigInt(entries.length));
    const mined = await receipt(hash);
    const used = new Set(mined.logs.filter((l) => l.topics[0] === AUTHORIZATION_USED).map((l) => authorizationKey(`0x${l.topics[1].slice(26)}`, l.topics[2])));
    for (const { checked, resolve } of entries) {
      resolve(
        used.has(authorizationKey(checked.payer, checked.nonce))
          ? { success: true, transaction: hash, network: checked.network, payer: checked.payer }
          : { success: false, errorReason: 'transaction_failed', transaction: hash, network: checked.network },
      );
    }
  } catch (error) {
    entries.forEach((e) => e.reject(error));
  }
}

const server = http.createServer((req, res) => {
  const answer = (status, value) => {
    const text = JSON.stringify(value);
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
  };
  if (req.method === 'GET' && req.url === '/ready') return answer(200, { ok: true });
  const route = req.method === 'POST' && { '/verify': verify, '/settle': settle }[req.url];
  if (!route) return answer(404, { error: 'not found' });
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () =>
    route(Buffer.concat(chunks).toString('utf8')).then(
      (v) => answer(200, v),
      (e) => answer(400, { error: String(e?.message ?? e) }),
    ),
  );
});
server.keepAliveTimeout = 60_000;
if (wallets.length) {
  // Read once: the bench's chain only lowers its base fee, and ours bids the same way.
  const [baseFee, tip] = await Promise.all([
    rpc('eth_getBlockByNumber', ['latest', false]).then((b) => BigInt(b.baseFeePerGas)),
    rpc('eth_maxPriorityFeePerGas', []),
  ]);
  fees = { maxPriorityFeePerGas: BigInt(tip), maxFeePerGas: 2n * baseFee + BigInt(tip) };
}
if (db) {
  await db.query('DROP SCHEMA IF EXISTS bench_floor CASCADE');
  await db.query('CREATE SCHEMA bench_floor');
  await db.query(`CREATE TABLE bench_floor.payments (
    authorization_key text PRIMARY KEY, tx_hash text NOT NULL, raw_tx text NOT NULL, state text NOT NULL DEFAULT 'submitted')`);
}
server.listen(Number(opt.port), '127.0.0.1');
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => process.exit(0));
