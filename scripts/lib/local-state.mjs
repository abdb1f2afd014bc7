// A fresh local chain makes every recorded payment meaningless (and dangerous: a worker would rebroadcast old
// signed transactions on the new chain). The demo and the tests start from empty tables (merchants, payments, the
// ledger's books, plans and subscriptions, the agent's tasks) and empty queues.
import pg from 'pg';
import { Redis } from 'ioredis';

/** The Redis prefix the facilitator derives from its database, unless QUEUE_PREFIX overrides it. */
export function queuePrefixFor(databaseUrl) {
  return process.env.QUEUE_PREFIX ?? `mp:${decodeURIComponent(new URL(databaseUrl).pathname.slice(1)) || 'postgres'}`;
}

export async function resetLocalState({ databaseUrl, redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' }) {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query(
      `TRUNCATE facilitator.webhook_delivery_attempts, facilitator.webhook_deliveries, facilitator.outbox_cursors, facilitator.mpp_claims, facilitator.stripe_events,
                facilitator.payment_transactions, facilitator.batch_settlement_operations, facilitator.payment_events, facilitator.payment_idempotency_keys, facilitator.payments,
                facilitator.mpp_secrets, facilitator.api_keys, facilitator.merchants, facilitator.chain_cursors,
                ledger.subscription_event_receipts, ledger.subscription_transitions, ledger.subscription_charges, ledger.subscriptions, ledger.plans, ledger.usage_events, ledger.usage_meters,
                ledger.reconciliation_rows, ledger.reconciliation_runs, ledger.receiving_addresses, ledger.pending_timeouts, ledger.failed_transfers, ledger.transfers, ledger.accounts,
                merchant.a2a_payment_submissions, merchant.a2a_payments, merchant.a2a_tasks
       CASCADE`, // and every table that refers to these (new ones need no edit here)
    );
  } finally {
    await client.end();
  }
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1, lazyConnect: true });
  await redis.connect();
  try {
    const prefix = queuePrefixFor(databaseUrl);
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      if (keys.length) await redis.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}
