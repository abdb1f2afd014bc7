#!/usr/bin/env node
// Moves the ledger ingestion's failed jobs (payment events the ledger refused, or that ran out of attempts) back to
// waiting, so the ledger's consumer books them again once their cause is gone. Bookings are idempotent: what was
// booked already answers `exists`.
//
//   npm run ledger:replay -- (--all | --payment <payment id> | --event <event id>)… [--dry-run]
//
// --payment and --event may be repeated; a job is replayed when it matches any of them (a batch job: when any of its
// events does; its events the ledger booked already answer `exists`). --dry-run lists the jobs
// without moving them. Reads REDIS_URL (default redis://127.0.0.1:6379) and QUEUE_PREFIX (default mp:<database name
// of DATABASE_URL>), like the facilitator and the ledger. Prints one line per job and a summary.
// Exit codes: 0 done (also when nothing matched), 2 usage error, 3 Redis could not be asked or a job could not be moved.
import { parseArgs } from 'node:util';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { queuePrefixFor } from './lib/local-state.mjs';

const QUEUE = 'payment-events';
/** the job name of a batch of events (libs/clients payment-events.ts PAYMENT_EVENT_BATCH_JOB) */
const BATCH_JOB = 'batch';
const USAGE = `usage: npm run ledger:replay -- (--all | --payment <payment id> | --event <event id>)… [--dry-run]`;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const PAGE = 1_000;

class UsageError extends Error {}

function options(argv) {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      options: {
        all: { type: 'boolean', default: false },
        payment: { type: 'string', multiple: true, default: [] },
        event: { type: 'string', multiple: true, default: [] },
        'dry-run': { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    }).values;
  } catch (error) {
    throw new UsageError(error.message);
  }
  if (parsed.help) return { help: true };
  const bad = parsed.payment.find((p) => !UUID.test(p));
  if (bad !== undefined) throw new UsageError(`--payment must be a payment id (a UUID), not ${JSON.stringify(bad)}`);
  const badEvent = parsed.event.find((e) => !/^[1-9][0-9]{0,17}$/.test(e));
  if (badEvent !== undefined) throw new UsageError(`--event must be an event id (a positive integer), not ${JSON.stringify(badEvent)}`);
  const filtered = parsed.payment.length > 0 || parsed.event.length > 0;
  if (parsed.all === filtered) throw new UsageError('name what to replay: --all, or --payment and/or --event (not both)');
  return { all: parsed.all, payments: new Set(parsed.payment.map((p) => p.toLowerCase())), events: new Set(parsed.event), dryRun: parsed['dry-run'] };
}

/** The events a job carries: a batch's, or the job's own. */
function eventsOf(job) {
  if (job.name !== BATCH_JOB) return [job.data ?? {}];
  return Array.isArray(job.data?.events) ? job.data.events.map((e) => e ?? {}) : [];
}

function matches(opts, job) {
  if (opts.all) return true;
  return eventsOf(job).some((data) => opts.payments.has(String(data.paymentId ?? '').toLowerCase()) || opts.events.has(String(data.eventId ?? '')));
}

/** Every failed job, read page by page before any is moved (moving shrinks the failed set under the reader). */
async function failedJobs(queue) {
  const jobs = [];
  for (let start = 0; ; start += PAGE) {
    const page = await queue.getFailed(start, start + PAGE - 1);
    jobs.push(...page.filter(Boolean));
    if (page.length < PAGE) return jobs;
  }
}

function describe(job) {
  const reason = String(job.failedReason ?? '').split('\n')[0];
  if (job.name === BATCH_JOB) {
    const events = eventsOf(job);
    return `${job.id}  batch of ${events.length} event(s) ${events[0]?.eventId ?? '?'}…${events.at(-1)?.eventId ?? '?'}, ${job.attemptsMade} attempt(s), failed: ${reason}`;
  }
  const { eventId = '?', type = '?', paymentId = '?' } = job.data ?? {};
  return `${job.id}  event ${eventId} ${type} of payment ${paymentId}, ${job.attemptsMade} attempt(s), failed: ${reason}`;
}

async function main() {
  let opts;
  try {
    opts = options(process.argv.slice(2));
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    console.error(`${error.message}\n${USAGE}`);
    return 2;
  }
  if (opts.help) {
    console.log(USAGE);
    return 0;
  }
  const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const prefix = queuePrefixFor(process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/machine_payments');
  // a few tries, then give up: an operator's command must not hang on a Redis that is away
  const connection = new Redis(redisUrl, { maxRetriesPerRequest: 1, connectTimeout: 5_000, retryStrategy: (times) => (times > 3 ? null : 250 * times) });
  connection.on('error', () => undefined);
  const queue = new Queue(QUEUE, { connection, prefix });
  queue.on('error', () => undefined);
  let problems = 0;
  try {
    await queue.waitUntilReady();
    const failed = await failedJobs(queue);
    const chosen = failed.filter((job) => matches(opts, job));
    for (const job of chosen) {
      if (opts.dryRun) {
        console.log(`would replay ${describe(job)}`);
        continue;
      }
      // described before the move, which clears the failure from the job
      const line = describe(job);
      try {
        // a fresh set of attempts: one that ran out of them gets its full backoff schedule again
        await job.retry('failed', { resetAttemptsMade: true, resetAttemptsStarted: true });
        console.log(`replayed ${line} → waiting`);
      } catch (error) {
        problems++;
        console.error(`not replayed ${job.id}: ${error.message}`);
      }
    }
    const moved = opts.dryRun ? 0 : chosen.length - problems;
    console.log(
      `${opts.dryRun ? `${chosen.length} job(s) would be moved` : `${moved} job(s) moved back to waiting`}, ${failed.length} failed job(s) in ${prefix}:${QUEUE}`,
    );
  } catch (error) {
    console.error(`cannot read ${prefix}:${QUEUE} at ${redisUrl.replace(/\/\/[^@/]*@/, '//***@')}: ${error.message}`);
    return 3;
  } finally {
    await queue.close().catch(() => undefined);
    connection.disconnect();
  }
  return problems > 0 ? 3 : 0;
}

process.exitCode = await main();
