#!/usr/bin/env node
// Reconciles a merchant's ledger against the chain and Stripe for a period, through the ledger's API.
//
//   LEDGER_API_KEY=mpk_… npm run recon -- --merchant <merchantId> --from <iso> --to <iso> [--ledger-url <url>] [--json] [--csv <file>]
//
// The merchant's API key comes from the environment variable LEDGER_API_KEY, so that it never has to be typed on a
// command line (shell history, the process list); --api-key <key> still works and wins over the variable.
// Starts a run (POST /reconciliations), follows it (GET /reconciliations/{id}) with a progress bar on stderr (plain
// lines when stderr is not a terminal), then prints the summary, the totals per asset and source (atomic units) and
// the link of the HTML report, which opens in a browser without an API key until it expires. --json prints the run
// as the API answers it instead; --csv also saves the report's rows as CSV.
// Exit codes: 0 no breaks, 1 breaks found, 2 usage error, 3 the run failed, another run of the merchant is in flight
// (409: one run at a time per merchant; the message names it) or the ledger could not be asked.
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

const USAGE = `usage: npm run recon -- --merchant <merchantId> --from <iso date-time> --to <iso date-time>
                     [--ledger-url http://127.0.0.1:4030] [--json] [--csv <file>]
The API key is read from LEDGER_API_KEY (or --api-key mpk_…, which leaves it in shell history and the process list).`;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const POLL_MS = 250;
const BREAK_LABELS = {
  missing_in_ledger: 'missing in ledger',
  missing_externally: 'missing externally',
  amount_mismatch: 'amount mismatch',
  duplicate: 'duplicate',
  over_refund: 'refunded more than captured',
  channel_deposit_mismatch: 'channel deposit mismatch',
  channel_settled_mismatch: 'channel settled mismatch',
  channel_claimed_mismatch: 'channel claimed mismatch',
  channel_refunded_mismatch: 'channel refunded mismatch',
  channel_not_finalized: 'channel not finalized on chain',
  channel_closed_on_chain_not_in_books: 'channel closed on chain, not in books',
  channel_not_on_chain: 'channel not on chain',
  channel_unknown_to_books: 'channel unknown to books',
  prepaid_funding_missing: 'top-up without its payment',
  prepaid_funding_mismatch: 'top-up amount mismatch',
  prepaid_balance_mismatch: 'prepaid balance mismatch',
  prepaid_negative: 'prepaid balance below zero',
};

class UsageError extends Error {}
class Failure extends Error {}

function options(argv, env = process.env) {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      options: {
        merchant: { type: 'string' },
        from: { type: 'string' },
        to: { type: 'string' },
        'ledger-url': { type: 'string' },
        'api-key': { type: 'string' },
        json: { type: 'boolean', default: false },
        csv: { type: 'string' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    }).values;
  } catch (error) {
    throw new UsageError(error.message);
  }
  if (parsed.help) return { help: true };
  if (!parsed.merchant || !UUID.test(parsed.merchant)) throw new UsageError('--merchant must be the merchant id (a UUID)');
  for (const name of ['from', 'to']) {
    if (!parsed[name] || !/^\d{4}-\d{2}-\d{2}T/.test(parsed[name]) || Number.isNaN(Date.parse(parsed[name])))
      throw new UsageError(`--${name} must be an ISO 8601 date-time, e.g. 2026-11-30T00:00:00Z`);
  }
  const ledgerUrl = (parsed['ledger-url'] ?? 'http://127.0.0.1:4030').replace(/\/+$/, '');
  if (!/^https?:\/\/\S+$/.test(ledgerUrl)) throw new UsageError('--ledger-url must be an http(s) URL');
  return {
    merchant: parsed.merchant.toLowerCase(),
    from: parsed.from,
    to: parsed.to,
    ledgerUrl,
    apiKey: parsed['api-key'] || env.LEDGER_API_KEY || undefined,
    json: parsed.json,
    csv: parsed.csv,
  };
}

/** One request to the ledger; a problem+json answer becomes a Failure with its detail. */
async function ledger(opts, method, path, body) {
  let response;
  try {
    response = await fetch(`${opts.ledgerUrl}${path}`, {
      method,
      headers: {
        accept: 'application/json',
        ...(opts.apiKey && { authorization: `Bearer ${opts.apiKey}` }),
        ...(body && { 'content-type': 'application/json' }),
      },
      ...(body && { body: JSON.stringify(body) }),
    });
  } catch (error) {
    throw new Failure(`the ledger at ${opts.ledgerUrl} cannot be reached (${error.cause?.code ?? error.message})`);
  }
  const text = await response.text();
  if (!response.ok) {
    let detail = text.slice(0, 300);
    try {
      const problem = JSON.parse(text);
      detail = problem.invalidParams?.length ? problem.invalidParams.map((p) => `${p.name}: ${p.reason}`).join('; ') : problem.detail;
    } catch {
      // not problem+json: the text is the detail
    }
    throw new Failure(`${method} ${path}: ${response.status} ${detail}`);
  }
  return { text, json: () => JSON.parse(text) };
}

/** Progress on stderr: a redrawn bar on a terminal, a line per phase or 10% step otherwise. */
function progressDrawer(stream) {
  let last = '';
  return {
    draw(run) {
      const p = run.progress ?? { phase: run.status, done: 0, total: 0, percent: 0 };
      const counts = p.phase === 'chain' ? ` ${p.done}/${p.total} blocks` : p.phase === 'stripe' && p.done ? ` ${p.done} objects` : '';
      const note = run.status === 'queued' && run.error ? ` (retrying: ${run.error})` : '';
      const label = `${run.status === 'running' ? p.phase : run.status}${counts}${note}`;
      if (stream.isTTY) {
        const width = Math.max(10, Math.min(40, (stream.columns || 80) - label.length - 20));
        const filled = Math.round((p.percent / 100) * width);
        stream.write(`\r\x1b[Kreconciling [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${String(p.percent).padStart(3)}% ${label}`);
        return;
      }
      const step = run.status === 'running' ? `${Math.floor(p.percent / 10) * 10}% ${p.phase}` : run.status === 'completed' ? '100% done' : run.status;
      const line = `reconciling ${step}${note}`;
      if (line !== last) stream.write(`${line}${counts ? ` (${counts.trim()})` : ''}\n`);
      last = line;
    },
    done() {
      if (stream.isTTY) stream.write('\n');
    },
  };
}

function summaryText(run, reportUrl) {
  const s = run.summary;
  const lines = [
    `Reconciliation ${run.id} of merchant ${run.merchantId}`,
    `Period   ${run.period.from} to ${run.period.to}`,
    `Rows     ${s.rows}: ${s.counts.matched} matched, ${s.counts.pending} pending, ${s.breaks} break${s.breaks === 1 ? '' : 's'}`,
  ];
  if (s.breaks)
    lines.push(
      `Breaks   ${Object.entries(BREAK_LABELS)
        // the payment kinds always, the balance checks' kinds when found
        .filter(([k], i) => i < 5 || s.counts[k])
        .map(([k, label]) => `${label} ${s.counts[k] ?? 0}`)
        .join(' · ')}`,
    );
  if (s.checked)
    lines.push(
      `Checked  ${s.checked.channels} payment channels against the escrow, ${s.checked.prepaidBalances} prepaid balances, ${s.checked.topUps} top-ups`,
    );
  if (s.scope?.leftOut) lines.push(`Left out ${s.scope.leftOut} ledger entries of kinds no scan covers (reconciled: ${s.scope.reconciled.join(', ')})`);
  if (run.totals.length) {
    const table = [['Asset', 'Source', 'Ledger net', 'External net', 'Difference', 'Breaks']].concat(
      run.totals.map((t) => [t.asset, t.source, t.ledger.net, t.external.net, t.difference, String(Object.values(t.breaks).reduce((a, b) => a + b, 0))]),
    );
    const widths = table[0].map((_, i) => Math.max(...table.map((row) => row[i].length)));
    lines.push(
      '',
      ...table.map((row) => row.map((cell, i) => (i >= 2 ? cell.padStart(widths[i]) : cell.padEnd(widths[i]))).join('  ')),
      '(amounts in atomic units of each asset)',
    );
  }
  lines.push('', `Report   ${reportUrl}`);
  return lines.join('\n');
}

async function main(argv) {
  const opts = options(argv);
  if (opts.help) {
    console.log(USAGE);
    return 0;
  }
  const started = (await ledger(opts, 'POST', '/reconciliations', { merchantId: opts.merchant, from: opts.from, to: opts.to })).json();
  const progress = progressDrawer(process.stderr);
  let run = started;
  for (;;) {
    progress.draw(run);
    if (run.status === 'completed' || run.status === 'failed') break;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    run = (await ledger(opts, 'GET', `/reconciliations/${started.id}`)).json();
  }
  progress.done();
  if (run.status === 'failed') throw new Failure(`reconciliation ${run.id} failed: ${run.error}`);

  const reportUrl = `${opts.ledgerUrl}${run.links.report}`;
  if (opts.csv) writeFileSync(opts.csv, (await ledger(opts, 'GET', run.links.csv)).text);
  if (opts.json) console.log(JSON.stringify(run, null, 2));
  else console.log(summaryText(run, reportUrl) + (opts.csv ? `\nCSV      ${opts.csv}` : ''));
  return run.summary.breaks > 0 ? 1 : 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error) => {
    if (error instanceof UsageError) {
      console.error(`recon: ${error.message}\n${USAGE}`);
      process.exit(2);
    }
    console.error(`recon: ${error instanceof Failure ? error.message : error.stack}`);
    process.exit(3);
  },
);
