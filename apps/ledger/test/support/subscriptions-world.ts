import { randomBytes, randomUUID } from 'node:crypto';
import { Test } from '@nestjs/testing';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { ManualClock } from '@mp/billing';
import {
  isChargeBatch,
  isMerchantNoticeBatch,
  MERCHANT_NOTICES_QUEUE,
  PAYMENT_EVENTS_QUEUE,
  SUBSCRIPTION_COMMANDS_QUEUE,
  type MerchantNoticeBatch,
  type MerchantNoticeJobData,
  type MerchantNoticeMessage,
  type PaymentEventData,
  type PaymentEventMessage,
  type PaymentSnapshot,
  type SubscriptionCommand,
  type SubscriptionCommandJobData,
} from '@mp/clients';
import { PrismaService } from '@mp/db';
import { configureHttpApp, serveHotRoutes } from '@mp/platform';
import { transfersHotRoutes } from '../../src/http/transfers.hot-routes';
import { AppModule } from '../../src/app.module';
import { BILLING_CLOCK } from '../../src/billing/billing.clock';
import { RenewalScheduler } from '../../src/billing/renewal.scheduler';
import { loadLedgerConfig, type LedgerConfig } from '../../src/ledger.config';
import { startFacilitator, type RunningFacilitator } from '../../../../test/support/facilitator';
import { TEST_DATABASE_URL } from '../../../../test/support/ledger-app';
import { call } from '../../../../test/support/http';

/**
 * The ledger as the facilitator sees it for subscriptions (issue 13): the real app (PostgreSQL, Redis, BullMQ) with a
 * ManualClock, fed payment events on its own `payment-events` queue exactly as the facilitator's relay publishes them,
 * and read back through the `subscription-commands` and `merchant-notices` queues it publishes on (no consumer runs
 * on this spec's prefix, so every job stays there to be read). A facilitator runs only to resolve API keys.
 */
export interface SubscriptionsWorld {
  clock: ManualClock;
  ledgerUrl: string;
  config: LedgerConfig;
  db: PrismaService;
  scheduler: RenewalScheduler;
  facilitator: RunningFacilitator;
  queues: { events: Queue; commands: Queue<SubscriptionCommandJobData>; notices: Queue<MerchantNoticeJobData> };
  close(): Promise<void>;
}

export async function startSubscriptionsWorld(start: Date, env: Record<string, string> = {}): Promise<SubscriptionsWorld> {
  const prefix = `mp:test-subs-${randomUUID().slice(0, 8)}`;
  const facilitator = await startFacilitator({ FACILITATOR_OPEN_MODE: 'false' });
  const config = loadLedgerConfig({
    ...process.env,
    DATABASE_URL: TEST_DATABASE_URL,
    LOG_LEVEL: 'error',
    DATABASE_POOL_SIZE: '6',
    LEDGER_INGEST: 'true',
    RECON_SCHEDULE: 'off',
    RENEWAL_SCAN_EVERY_MS: '0',
    FACILITATOR_URL: facilitator.url,
    QUEUE_PREFIX: prefix,
    ...env,
  });
  const clock = new ManualClock(start);
  const moduleRef = await Test.createTestingModule({ imports: [AppModule.forConfig(config)] })
    .overrideProvider(BILLING_CLOCK)
    .useValue(clock)
    .compile();
  const app = moduleRef.createNestApplication({ bodyParser: false, logger: ['error'] });
  configureHttpApp(app, { bodyLimitBytes: config.bodyLimitBytes, trustProxy: config.trustProxy });
  serveHotRoutes(app, transfersHotRoutes(app), { bodyLimitBytes: config.bodyLimitBytes });
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as { port: number };
  const redis = new Redis(config.redisUrl, { maxRetriesPerRequest: null });
  const queues = {
    events: new Queue(PAYMENT_EVENTS_QUEUE, { connection: redis, prefix }),
    commands: new Queue<SubscriptionCommandJobData>(SUBSCRIPTION_COMMANDS_QUEUE, { connection: redis, prefix }),
    notices: new Queue<MerchantNoticeJobData>(MERCHANT_NOTICES_QUEUE, { connection: redis, prefix }),
  };
  return {
    clock,
    ledgerUrl: `http://127.0.0.1:${port}`,
    config,
    db: app.get(PrismaService),
    scheduler: app.get(RenewalScheduler),
    facilitator,
    queues,
    close: async () => {
      await app.close();
      await Promise.all(Object.values(queues).map((q) => q.obliterate({ force: true }).catch(() => undefined)));
      await Promise.all(Object.values(queues).map((q) => q.close()));
      redis.disconnect();
      await facilitator.close();
    },
  };
}

let nextEventId = BigInt(Date.now()) * 1000n;
/** Outbox ids: strictly increasing, unique in this run. */
export const eventId = () => String(++nextEventId);

/** A subscription id as the facilitator makes them: base64url, 22 characters. */
export const newSubscriptionId = () => randomBytes(16).toString('base64url');

export interface SubscriptionTerms {
  subscriptionId: string;
  merchantId: string;
  payer: string;
  payTo: string;
  amount: string;
  asset: string;
  network: string;
  periodUnit: 'day' | 'week' | 'month';
  periodCount: number;
  anchor: Date;
  planId?: string | null;
  expiresAt?: Date | null;
  authorizedPeriods?: number | null;
  method?: 'evm' | 'stripe';
}

/** The payment the facilitator would make for a (period, attempt) of the subscription. */
export function chargePayment(terms: SubscriptionTerms, periodIndex: number, attempt: number, paymentId = randomUUID()): PaymentSnapshot {
  return {
    id: paymentId,
    state: 'verified',
    protocol: 'mpp',
    rail: terms.method ?? 'evm',
    network: terms.network,
    asset: terms.asset,
    payer: terms.payer,
    payTo: terms.payTo,
    amount: terms.amount,
    nonce: `0x${randomBytes(32).toString('hex')}`,
    scheme: terms.method ?? 'evm',
    challengeId: null,
    reference: null,
    txHash: null,
    merchantId: terms.merchantId,
    subscription: { id: terms.subscriptionId, periodIndex, attempt },
  };
}

function message<T extends PaymentEventMessage['type']>(type: T, payment: PaymentSnapshot, data: PaymentEventData<T>, occurredAt: Date): PaymentEventMessage {
  return {
    eventId: eventId(),
    type,
    paymentId: payment.id,
    merchantId: payment.merchantId,
    occurredAt: occurredAt.toISOString(),
    data,
    payment,
  } as PaymentEventMessage;
}

const hash = () => `0x${randomBytes(32).toString('hex')}`;

/** The facilitator's events, built through the contract's own types (the consumer parses them with its schema). */
export const events = {
  activated(terms: SubscriptionTerms, payment: PaymentSnapshot, at: Date): PaymentEventMessage {
    return message(
      'subscription.activated',
      payment,
      {
        subscriptionId: terms.subscriptionId,
        method: terms.method ?? 'evm',
        planId: terms.planId ?? null,
        payer: terms.payer,
        payTo: terms.payTo,
        network: terms.network,
        asset: terms.asset,
        amount: terms.amount,
        periodUnit: terms.periodUnit,
        periodCount: terms.periodCount,
        anchor: terms.anchor.toISOString(),
        expiresAt: terms.expiresAt?.toISOString() ?? null,
        authorizedPeriods: terms.authorizedPeriods === undefined ? 12 : terms.authorizedPeriods,
        challengeId: `ch_${terms.subscriptionId}`,
      },
      at,
    );
  },
  verified(payment: PaymentSnapshot, at: Date): PaymentEventMessage {
    return message(
      'payment.verified',
      payment,
      {
        network: payment.network,
        asset: payment.asset,
        payer: payment.payer,
        payTo: payment.payTo,
        amount: payment.amount,
        nonce: payment.nonce,
        protocol: 'mpp',
        rail: payment.rail,
        method: payment.scheme,
      },
      at,
    );
  },
  /** `txHash`: the same transaction again (mined anew after a reorg); default a new one */
  confirmed(payment: PaymentSnapshot, at: Date, txHash = hash()): PaymentEventMessage {
    return message(
      'payment.confirmed',
      { ...payment, state: 'confirmed', txHash },
      { txHash, blockNumber: '100', blockHash: hash(), gasUsed: '60000', gasFee: '0' },
      at,
    );
  },
  reorged(payment: PaymentSnapshot, at: Date): PaymentEventMessage {
    return message('payment.reorged', { ...payment, state: 'submitted' as PaymentSnapshot['state'] }, { blockHash: hash(), blockNumber: '100' }, at);
  },
  failed(payment: PaymentSnapshot, at: Date, reason = 'insufficient_funds'): PaymentEventMessage {
    return message('payment.failed', { ...payment, state: 'failed' }, { reason, message: `the transfer failed: ${reason}`, broadcast: false }, at);
  },
  refused(
    terms: SubscriptionTerms,
    payment: PaymentSnapshot,
    periodIndex: number,
    attempt: number,
    reason: PaymentEventData<'subscription.charge_refused'>['reason'],
    at: Date,
  ) {
    return message(
      'subscription.charge_refused',
      payment,
      {
        subscriptionId: terms.subscriptionId,
        periodIndex,
        attempt,
        commandId: `charge-${terms.subscriptionId}-${periodIndex}-${attempt}`,
        reason,
        message: reason,
      },
      at,
    );
  },
  revoked(terms: SubscriptionTerms, payment: PaymentSnapshot, at: Date): PaymentEventMessage {
    return message(
      'subscription.revoked',
      payment,
      {
        subscriptionId: terms.subscriptionId,
        reason: 'authorization_canceled',
        message: 'AuthorizationCanceled on chain',
        at: at.toISOString(),
        nonce: hash(),
        txHash: hash(),
      },
      at,
    );
  },
  /** a refund of the (confirmed) payment executed, under `idempotencyKey` (the ledger's refund command id, or the merchant's own) */
  refunded(payment: PaymentSnapshot, amount: bigint, idempotencyKey: string, at: Date, refundId = randomUUID()): PaymentEventMessage {
    return message(
      'payment.refunded',
      { ...payment, state: 'confirmed' },
      { refundId, amount: amount.toString(), reason: 'customer_request', idempotencyKey, refundTo: null, reference: hash() },
      at,
    );
  },
  refundFailed(payment: PaymentSnapshot, amount: bigint, idempotencyKey: string, at: Date): PaymentEventMessage {
    return message(
      'payment.refund_failed',
      { ...payment, state: 'confirmed' },
      {
        refundId: randomUUID(),
        amount: amount.toString(),
        reason: 'customer_request',
        idempotencyKey,
        refundTo: null,
        reference: hash(),
        failureReason: 'reverted',
        message: 'the transfer reverted',
      },
      at,
    );
  },
  canceled(terms: SubscriptionTerms, payment: PaymentSnapshot, at: 'period_end' | 'immediately', when: Date): PaymentEventMessage {
    return message(
      'subscription.canceled',
      payment,
      { subscriptionId: terms.subscriptionId, commandId: `cancel-${terms.subscriptionId}-${at}`, at, effectiveAt: when.toISOString() },
      when,
    );
  },
};

/** Publishes the events as the relay does (job id per event, retried with backoff) and waits until the ledger has done each. */
export async function deliver(world: SubscriptionsWorld, ...messages: PaymentEventMessage[]): Promise<void> {
  const jobs = await Promise.all(
    messages.map((m) =>
      world.queues.events.add(m.type, m, { jobId: `event-${m.eventId}-${m.paymentId}`, attempts: 20, backoff: { type: 'fixed', delay: 50 } }),
    ),
  );
  for (const job of jobs) {
    const deadline = Date.now() + 20_000;
    for (;;) {
      const state = await world.queues.events.getJobState(job.id!);
      if (state === 'completed') break;
      if (state === 'failed') {
        const failed = await world.queues.events.getJob(job.id!);
        throw new Error(`event ${job.name} failed: ${failed?.failedReason}`);
      }
      if (Date.now() > deadline) throw new Error(`event ${job.name} not processed (${state})`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}

/** Every command the ledger has published for a subscription (alone or in a batch), in the order it published them. */
/**
 * The subscription's commands, each once: a charge published in a batch job and again on its own (the sweep republishes
 * one job per command) is one command, and must be the same command both times.
 */
export async function commandsOf(world: SubscriptionsWorld, subscriptionId: string): Promise<SubscriptionCommand[]> {
  const jobs = await world.queues.commands.getJobs(['waiting', 'delayed', 'prioritized', 'active', 'completed', 'failed'], 0, -1, true);
  const commands = new Map<string, SubscriptionCommand>();
  for (const command of jobs.flatMap((j): SubscriptionCommand[] => (isChargeBatch(j.data) ? j.data.commands : [j.data]))) {
    if (command.subscriptionId !== subscriptionId) continue;
    const seen = commands.get(command.commandId);
    if (seen && JSON.stringify(seen) !== JSON.stringify(command))
      throw new Error(`command ${command.commandId} published as two different commands: ${JSON.stringify(seen)} and ${JSON.stringify(command)}`);
    commands.set(command.commandId, command);
  }
  return [...commands.values()].sort((a, b) => a.requestedAt.localeCompare(b.requestedAt) || a.commandId.localeCompare(b.commandId));
}

export async function noticesOf(world: SubscriptionsWorld, subscriptionId: string): Promise<MerchantNoticeMessage[]> {
  const jobs = await world.queues.notices.getJobs(['waiting', 'delayed', 'prioritized', 'active', 'completed', 'failed'], 0, -1, true);
  return jobs
    .flatMap((j) => (isMerchantNoticeBatch(j.data) ? (j.data as MerchantNoticeBatch).notices : [j.data as MerchantNoticeMessage]))
    .filter((d) => d.data.subscriptionId === subscriptionId)
    .sort((a, b) => Number(a.data.version) - Number(b.data.version));
}

export const api = (world: SubscriptionsWorld, key?: string) => ({
  get: (path: string) => call(`${world.ledgerUrl}${path}`, { key }),
  post: (path: string, body?: unknown) => call(`${world.ledgerUrl}${path}`, { key, method: 'POST', body }),
});
