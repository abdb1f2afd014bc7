// What the ledger benches (ledger.mjs, usage.mjs) share: the stack they measure (a fresh database, anvil, the
// facilitator for API keys, a merchant made through its operator API, the ledger), a keep-alive load loop, and the
// CPU of the processes under load.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startAnvil } from '../../scripts/lib/anvil.mjs';
import { dropDatabase, migrateDeploy } from '../../scripts/lib/database.mjs';
import { appEntry } from '../../scripts/lib/build.mjs';
import { deployLocalChain, writeManifest } from '../../scripts/lib/deploy.mjs';
import { cpuSeconds, cpuSecondsOf } from './processes.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * Starts the ledger as an operator would run it, on a database made anew, with a merchant whose API key the load uses.
 * @param {{ name: string, processes: ReturnType<import('./processes.mjs').childProcesses>, logFile: (label: string) => string,
 *   say: (msg: string) => void, databaseUrl: string, anvilPort: number, facilitatorPort: number, ledgerPort: number,
 *   ledgerEnv: Record<string, string>, ledgerNodeArgs?: string[], ledgerReplicas?: number,
 *   baseline?: { entry: string, port: number } }} opts
 * `baseline`: another build of the ledger (its main.js), started beside ours on the same database and merchant.
 * @returns {Promise<{ apiKey: string, ledger: { pid: number, port: number }, ledgers: { pid: number, port: number }[],
 *   baseline?: { pid: number, port: number } }>}
 */
export async function startLedgerStack({
  name,
  processes,
  logFile,
  say,
  databaseUrl,
  anvilPort,
  facilitatorPort,
  ledgerPort,
  ledgerEnv,
  ledgerNodeArgs = [],
  ledgerReplicas = 1,
  baseline,
}) {
  const startServer = (label, env, port, readyPath, nodeArgs = [], entry = appEntry(label)) =>
    processes.start({ label, args: [...nodeArgs, entry], env, log: logFile(label), readyUrl: `http://127.0.0.1:${port}${readyPath}` });

  say(`fresh database ${new URL(databaseUrl).pathname.slice(1)}`);
  await dropDatabase(databaseUrl);
  await migrateDeploy({ databaseUrl, quiet: true });

  const anvil = (processes.anvil = await startAnvil({ port: anvilPort }));
  const manifestPath = path.join(ROOT, '.local', `chain-bench-${name}.json`);
  writeManifest(manifestPath, await deployLocalChain({ rpcUrl: anvil.rpcUrl }));
  const common = { DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn', QUEUE_PREFIX: `bench-${name}-${process.pid}` };
  // the merchant is made through the facilitator's operator API, as an operator would
  const operatorToken = randomBytes(32).toString('hex');
  await startServer(
    'facilitator',
    {
      ...common,
      FACILITATOR_PORT: String(facilitatorPort),
      CHAIN_MANIFEST: manifestPath,
      FACILITATOR_OPEN_MODE: 'false',
      FACILITATOR_ROLE: 'api',
      OPERATOR_TOKEN: operatorToken,
    },
    facilitatorPort,
    '/health',
  );
  const created = spawnSync(process.execPath, ['scripts/merchants.mjs', 'create', '--name', `${name} bench`, '--json'], {
    cwd: ROOT,
    env: { ...process.env, FACILITATOR_URL: `http://127.0.0.1:${facilitatorPort}`, OPERATOR_TOKEN: operatorToken },
    encoding: 'utf8',
  });
  if (created.status !== 0) throw new Error(`merchants.mjs create failed: ${created.stderr}`);
  const { apiKey } = JSON.parse(created.stdout);
  // Replicas (one process per core) share the database; each listens on the next port.
  const ledgerAt = (port) => ({ ...common, LEDGER_PORT: String(port), FACILITATOR_URL: `http://127.0.0.1:${facilitatorPort}`, ...ledgerEnv });
  const ledgers = [];
  for (let r = 0; r < ledgerReplicas; r++) {
    const port = ledgerPort + r;
    const label = r === 0 ? 'ledger' : `ledger-${r + 1}`;
    ledgers.push(Object.assign(await startServer(label, ledgerAt(port), port, '/ready', ledgerNodeArgs, appEntry('ledger')), { port }));
  }
  const other =
    baseline && Object.assign(await startServer('baseline', ledgerAt(baseline.port), baseline.port, '/ready', [], baseline.entry), { port: baseline.port });
  return { apiKey, ledger: ledgers[0], ledgers, ...(other && { baseline: other }) };
}

/**
 * POSTs every body to the ledger from `concurrency` keep-alive loops, each taking the next body when its answer is in;
 * a request's latency runs to its answer's last byte. With `ports`, loop i sends to ports[i % ports.length].
 * @param {{ port: number, ports?: number[], path: string, apiKey: string, bodies: string[], concurrency: number, contentType: (body: string) => string }} opts
 */
export async function postAll({ port, ports = [port], path: route, apiKey, bodies, concurrency, contentType }) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const latencies = new Float64Array(bodies.length);
  const answers = new Array(bodies.length);
  let next = 0;
  const post = (body, loop) =>
    new Promise((resolve, reject) => {
      const req = http.request(
        {
          host: '127.0.0.1',
          port: ports[loop % ports.length],
          path: route,
          method: 'POST',
          agent,
          headers: { 'content-type': contentType(body), 'content-length': Buffer.byteLength(body), authorization: `Bearer ${apiKey}` },
        },
        (res) => {
          const chunks = [];
          res.on('data', (c) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode, text: Buffer.concat(chunks).toString('utf8') }));
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: Math.min(concurrency, bodies.length) }, async (_, loop) => {
      for (let i = next++; i < bodies.length; i = next++) {
        const started = performance.now();
        answers[i] = await post(bodies[i], loop);
        latencies[i] = performance.now() - started;
      }
    }),
  );
  const wallMs = performance.now() - t0;
  agent.destroy();
  return { wallMs, latencies, answers };
}

export const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];

/**
 * CPU seconds so far of the ledger (its processes together, given several pids), of PostgreSQL and of this load
 * generator. PostgreSQL's is every postgres process's on the machine, with the backends that have ended (their time
 * moves to the postmaster's children's, processes.mjs): reading only the backends alive at each probe lost what a
 * connection that ended during a phase had used. It includes PostgreSQL's own background processes (WAL writer,
 * checkpointer), which work for these transfers too.
 */
export function cpuProbe(ledgerPid) {
  const ledgerPids = [ledgerPid].flat();
  return async () => {
    const ledgers = ledgerPids.map(cpuSeconds);
    const self = process.cpuUsage();
    return {
      ledger: ledgers.includes(null) ? null : ledgers.reduce((a, b) => a + b, 0),
      postgres: cpuSecondsOf(['postgres']),
      loadGenerator: (self.user + self.system) / 1e6,
    };
  };
}
