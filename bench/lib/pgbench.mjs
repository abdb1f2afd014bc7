// pgbench straight into PostgreSQL, for the ledger bench's side-by-side figures: the plain locked-SQL function
// (bench/sql/plain-ledger.sql) under the same load as the ledger's HTTP API, so the ratio to PostgreSQL's own
// ceiling on this machine is printed in the same run.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { busyFraction, machineCpu } from './processes.mjs';

// `?host=/var/run/postgresql` in the URL (PostgreSQL's Unix socket, as node-postgres reads it) is pgbench's host too,
// so both sides of a comparison reach PostgreSQL the same way.
const connectionArgs = (databaseUrl) => {
  const url = new URL(databaseUrl);
  const host = url.searchParams.get('host') ?? url.hostname;
  return ['-h', host, '-p', url.port || '5432', '-U', decodeURIComponent(url.username || 'postgres'), url.pathname.slice(1)];
};

/** Is pgbench on this machine (PATH, or PostgreSQL's own bin directories)? Its path, or null. */
export function findPgbench() {
  const candidates = ['pgbench'];
  try {
    for (const version of fs.readdirSync('/usr/lib/postgresql').sort().reverse()) candidates.push(`/usr/lib/postgresql/${version}/bin/pgbench`);
  } catch {
    // not a Debian layout
  }
  for (const candidate of candidates) if (spawnSync(candidate, ['--version'], { encoding: 'utf8' }).status === 0) return candidate;
  return null;
}

/** Creates the plain ledger's schema and accounts: `limited` ids funded with `funding`, `unlimited` ids at zero. */
export async function setUpPlainLedger(db, { limited, unlimited, funding }) {
  await db.query(fs.readFileSync(new URL('../sql/plain-ledger.sql', import.meta.url), 'utf8'));
  await db.query(
    `INSERT INTO plain.accounts (id, balance, limited)
     SELECT id, $2::numeric, true FROM unnest($1::bigint[]) AS id
     UNION ALL SELECT id, 0, false FROM unnest($3::bigint[]) AS id`,
    [limited, funding.toString(), unlimited],
  );
}

/**
 * The pgbench scripts of the scenarios, accounts as setUpPlainLedger made them. `single`: one transfer per transaction
 * between two distinct accounts of `spread`, or from one of `payers` to `hot` (pgbench draws them). `batch`: `size`
 * transfers between distinct accounts of `spread` in one transaction (drawn by PostgreSQL's random(): a statement
 * takes at most 255 pgbench variables).
 */
export const plainScripts = {
  single: ({ spread, payers, hot }) =>
    spread
      ? `\\set a random(${spread[0]}, ${spread[1]})\n\\set b random(${spread[0]}, ${spread[1] - 1})\n\\set b CASE WHEN :b >= :a THEN :b + 1 ELSE :b END\n` +
        `\\set m random(1, 1000)\nSELECT plain.transfer(gen_random_uuid(), :a, :b, :m);\n`
      : `\\set p random(${payers[0]}, ${payers[1]})\n\\set m random(1, 1000)\nSELECT plain.transfer(gen_random_uuid(), :p, ${hot}, :m);\n`,
  batch: ({ spread: [first, last], size }) =>
    `SELECT plain.transfer_batch(array_agg(a), array_agg(CASE WHEN b >= a THEN b + 1 ELSE b END), array_agg(m)) FROM (` +
    `SELECT ${first} + floor(random() * ${last - first + 1})::bigint AS a, ${first} + floor(random() * ${last - first})::bigint AS b, ` +
    `1 + floor(random() * 1000)::numeric AS m FROM generate_series(1, ${size})) drawn;\n`,
};

/**
 * Runs `transactions` transactions of `script` from `clients` connections (pgbench -M prepared, two threads) and
 * answers the transactions per second and the per-transaction latencies (from pgbench's own log), in ms.
 */
export async function runPgbench({ pgbench, databaseUrl, script, clients, transactions, workDir }) {
  const dir = fs.mkdtempSync(path.join(workDir ?? os.tmpdir(), 'pgbench-'));
  const scriptFile = path.join(dir, 'script.sql');
  fs.writeFileSync(scriptFile, script);
  const perClient = Math.ceil(transactions / clients);
  const args = ['-n', '-M', 'prepared', '-c', String(clients), '-j', String(Math.min(2, clients)), '-t', String(perClient), '-f', scriptFile];
  args.push('-l', '--log-prefix', path.join(dir, 'log'), ...connectionArgs(databaseUrl));
  const m0 = machineCpu();
  const t0 = performance.now();
  const { code, out } = await new Promise((resolve, reject) => {
    const child = spawn(pgbench, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let text = '';
    child.stdout.on('data', (c) => (text += c));
    child.stderr.on('data', (c) => (text += c));
    child.on('error', reject);
    child.on('exit', (exitCode) => resolve({ code: exitCode, out: text }));
  });
  const wallMs = performance.now() - t0;
  const machineBusy = busyFraction(m0, machineCpu());
  if (code !== 0) throw new Error(`pgbench exited ${code}: ${out.trim().split('\n').slice(-5).join(' | ')}`);
  const latencies = [];
  for (const file of fs.readdirSync(dir).filter((f) => f.startsWith('log'))) {
    for (const line of fs.readFileSync(path.join(dir, file), 'utf8').split('\n')) {
      const fields = line.split(' ');
      // client_id transaction_no latency_us script_no epoch_s epoch_us
      if (fields.length >= 6) latencies.push(Number(fields[2]) / 1000);
    }
  }
  const failed = /number of failed transactions: (\d+)/.exec(out)?.[1];
  const tps = /tps = ([\d.]+) \(without initial connection time\)/.exec(out)?.[1];
  fs.rmSync(dir, { recursive: true, force: true });
  return {
    transactions: perClient * clients,
    failed: failed === undefined ? 0 : Number(failed),
    tps: tps === undefined ? null : Number(tps),
    wallMs,
    latencies: Float64Array.from(latencies).sort(),
    machineBusy,
  };
}
