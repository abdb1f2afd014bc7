// Round-trip counter, preloaded into a server with `node --import ./bench/lib/round-trip-counter.mjs` (bench only:
// bench/x402-facilitator.mjs --count-round-trips). It counts, in the process:
//   - PostgreSQL statements (pg Client.query, which Prisma's pg adapter and pg Pool.query both go through), by kind,
//     and transactions (BEGIN);
//   - Redis commands (ioredis sendCommand; BullMQ's Lua scripts named by their script), and pipelines (one round trip);
//   - JSON-RPC calls sent with fetch (viem's http transport) or node:http (ours: libs/chain keep-alive-fetch.ts), by method,
//     and the HTTP requests that carried them;
//   - HTTP requests the server answered.
// and keeps a timeline of the last TRACE_MAX of them (start and duration, in ms since the process started), so one
// settlement's round trips and the waits between them can be read from a serial run.
//
// When ROUND_TRIP_FILE.ask appears it writes {counts, trace} as JSON to ROUND_TRIP_FILE (the trace is then emptied). It changes nothing it
// wraps: every call goes through unchanged, and its result or error comes back as it was.
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';

// The servers are CommonJS: patch the very modules they will require (one module cache).
const require = createRequire(import.meta.url);

const FILE = process.env.ROUND_TRIP_FILE;
const TRACE_MAX = 20_000;
const counts = {};
let trace = [];

function bump(key, n = 1) {
  counts[key] = (counts[key] ?? 0) + n;
}
function mark(kind, name, started) {
  if (trace.length < TRACE_MAX) trace.push({ kind, name, t: +started.toFixed(2), ms: +(performance.now() - started).toFixed(2) });
}
function settleTiming(kind, name, started, result) {
  if (result && typeof result.then === 'function') {
    result.then(
      () => mark(kind, name, started),
      () => mark(kind, `${name} (error)`, started),
    );
  } else mark(kind, name, started);
  return result;
}

// --- PostgreSQL -------------------------------------------------------------------------------------------------
function sqlKind(text) {
  const s = String(text).trim().replace(/^\(+/, '');
  const word = /^[A-Za-z]+/.exec(s)?.[0]?.toUpperCase() ?? '?';
  if (word !== 'WITH') return word;
  // a CTE: name it by its final verb (WITH … INSERT / UPDATE / SELECT)
  const tail = /\)\s*(INSERT|UPDATE|DELETE|SELECT)\b[^()]*$/i.exec(s)?.[1]?.toUpperCase();
  return `WITH…${tail ?? ''}`;
}
try {
  const pg = require('pg');
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function countedQuery(config, values, callback) {
    const text = typeof config === 'string' ? config : config?.text;
    if (text === undefined) return query.call(this, config, values, callback); // a Submittable (cursor): not ours
    const kind = sqlKind(text);
    bump('pg.statements');
    bump(`pg.${kind}`);
    if (kind === 'BEGIN') bump('pg.transactions');
    const started = performance.now();
    const label = `${kind} ${String(text).replace(/\s+/g, ' ').slice(0, 90)}`;
    return settleTiming('pg', label, started, query.call(this, config, values, callback));
  };
} catch {
  /* no pg here */
}

// --- Redis (ioredis) --------------------------------------------------------------------------------------------
try {
  const Redis = require('ioredis').default ?? require('ioredis');
  const scripts = new Map();
  const defineCommand = Redis.prototype.defineCommand;
  Redis.prototype.defineCommand = function namedDefineCommand(name, definition) {
    if (definition?.lua) scripts.set(crypto.createHash('sha1').update(definition.lua).digest('hex'), name);
    return defineCommand.call(this, name, definition);
  };
  const sendCommand = Redis.prototype.sendCommand;
  Redis.prototype.sendCommand = function countedSendCommand(command, stream) {
    let name = String(command?.name ?? '?').toLowerCase();
    if (name === 'evalsha' || name === 'eval') {
      const first = command.args?.[0];
      const sha = name === 'eval' ? crypto.createHash('sha1').update(String(first)).digest('hex') : String(first);
      name = `${name}:${scripts.get(sha) ?? sha.slice(0, 8)}`;
    }
    bump('redis.commands');
    bump(`redis.${name}`);
    if (stream) bump('redis.inPipeline');
    const started = performance.now();
    const result = sendCommand.call(this, command, stream);
    if (command?.promise) settleTiming('redis', name, started, command.promise);
    return result;
  };
  const Pipeline = require('ioredis/built/Pipeline').default;
  const exec = Pipeline.prototype.exec;
  Pipeline.prototype.exec = function countedExec(...args) {
    bump('redis.pipelines');
    return exec.apply(this, args);
  };
} catch {
  /* no ioredis here */
}

// --- JSON-RPC over fetch (viem's http transport) ---------------------------------------------------------------
if (typeof globalThis.fetch === 'function') {
  const fetch = globalThis.fetch;
  globalThis.fetch = function countedFetch(input, init) {
    let methods;
    if (typeof init?.body === 'string') {
      try {
        const body = JSON.parse(init.body);
        methods = (Array.isArray(body) ? body : [body]).map((m) => m?.method).filter((m) => typeof m === 'string');
      } catch {
        /* not JSON-RPC */
      }
    }
    if (!methods?.length) return fetch.call(this, input, init);
    bump('rpc.httpRequests');
    bump('rpc.calls', methods.length);
    for (const m of methods) bump(`rpc.${m}`);
    return settleTiming('rpc', methods.join('+'), performance.now(), fetch.call(this, input, init));
  };
}

// --- JSON-RPC over node:http (the facilitator's network clients: libs/chain keep-alive-fetch.ts) -----------------------
const end = http.ClientRequest.prototype.end;
http.ClientRequest.prototype.end = function countedEnd(chunk, ...rest) {
  if (typeof chunk === 'string' && chunk.startsWith('{') !== chunk.startsWith('[')) {
    let methods;
    try {
      const body = JSON.parse(chunk);
      methods = (Array.isArray(body) ? body : [body]).map((m) => m?.method).filter((m) => typeof m === 'string');
    } catch {
      /* not JSON-RPC */
    }
    if (methods?.length) {
      bump('rpc.httpRequests');
      bump('rpc.calls', methods.length);
      for (const m of methods) bump(`rpc.${m}`);
      const started = performance.now();
      const name = methods.join('+');
      this.once('response', (res) => res.once('end', () => mark('rpc', name, started)));
      this.once('error', () => mark('rpc', `${name} (error)`, started));
    }
  }
  return end.call(this, chunk, ...rest);
};

// --- HTTP requests the server answers --------------------------------------------------------------------------
const emit = http.Server.prototype.emit;
http.Server.prototype.emit = function countedEmit(event, req, res) {
  if (event === 'request') {
    bump('http.requests');
    const started = performance.now();
    const name = `${req.method} ${req.url}`;
    res.once('finish', () => mark('http', name, started));
  }
  return emit.apply(this, arguments);
};

// Asked for a snapshot by a file, not a signal: Nest's shutdown hooks take SIGUSR2 (and most others) as "stop".
if (FILE) {
  const ask = `${FILE}.ask`;
  setInterval(() => {
    if (!fs.existsSync(ask)) return;
    fs.rmSync(ask, { force: true });
    // zeroUs: the trace's time 0 on the monotonic clock V8's CPU profiles use (µs), to line the two up
    const zeroUs = Number(process.hrtime.bigint() / 1000n) - performance.now() * 1000;
    const snapshot = { pid: process.pid, at: performance.now(), zeroUs, counts: { ...counts }, trace };
    trace = [];
    fs.writeFileSync(`${FILE}.tmp`, JSON.stringify(snapshot));
    fs.renameSync(`${FILE}.tmp`, FILE);
  }, 20).unref();
}
