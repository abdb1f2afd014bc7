import { InjectQueue, OnWorkerEvent, Processor, WorkerHost } from '@nestjs/bullmq';
import { Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import type { DefaultJobOptions, Job, Queue } from 'bullmq';
import type { Clock } from '@mp/billing';
import { PrismaService, withTransaction } from '@mp/db';
import { whenQueueReady } from '@mp/platform';
import { LEDGER_CONFIG, type LedgerConfig } from '../ledger.config';
import { BILLING_CLOCK } from './billing.clock';
import { advance, cancelCommandId, Change, cancelEffectiveAt, refundCommand } from './subscription-engine';
import { SubscriptionOutbox } from './subscription-outbox';
import { SubscriptionsRepository } from './subscriptions.repository';
import { UsageCollector } from './usage-collector';

export const RENEWALS_QUEUE = 'subscription-renewals';
/** The job scheduler's id, also the name of the jobs it makes. */
export const RENEWAL_SCHEDULER_ID = 'renewal-scan';
export const RENEWAL_JOB_OPTIONS = { removeOnComplete: 100, removeOnFail: 100 } satisfies DefaultJobOptions;

/** How long a subscription whose advance threw waits before the scan tries it again. */
const PARK_MS = 3_600_000;
/** Most commands and notices one sweep publishes again. */
const SWEEP_LIMIT = 1_000;

export interface ScanResult {
  /** subscriptions the scan looked at */
  scanned: number;
  /** charge commands it asked for */
  charged: number;
  /** transitions it recorded */
  transitions: number;
  /** commands and notices it published again */
  republished: number;
  /** usage charges it drew from prepaid balances, and those it found short */
  usagePaid: number;
  usageUnpaid: number;
}

/**
 * Renewals: what time has made due, for every subscription whose next_action_at has come. In batches of
 * RENEWAL_SCAN_BATCH, each in one transaction (rows locked FOR UPDATE SKIP LOCKED, so scans on several replicas
 * share the work): the lifecycle events time made due, then the charge @mp/billing allows, written with the mark of
 * the charge in flight, and the usage charges of the periods that closed; the commands go out after the commit. Then
 * the usage charges are drawn from prepaid balances (UsageCollector). Then commands without an outcome are published again
 * after SUBSCRIPTION_COMMAND_REPUBLISH_AFTER_MS (the same command id: the facilitator does each once), and notices a
 * crash kept back.
 */
@Injectable()
export class RenewalScheduler {
  private readonly logger = new Logger('Renewals');

  constructor(
    @Inject(LEDGER_CONFIG) private readonly config: LedgerConfig,
    private readonly db: PrismaService,
    private readonly subscriptions: SubscriptionsRepository,
    private readonly outbox: SubscriptionOutbox,
    @Inject(BILLING_CLOCK) private readonly clock: Clock,
    private readonly usage: UsageCollector,
  ) {}

  /** One scan at the clock's time (the job scheduler's tick). */
  scan(): Promise<ScanResult> {
    return this.runDue(this.clock.now());
  }

  async runDue(now: Date): Promise<ScanResult> {
    const result: ScanResult = { scanned: 0, charged: 0, transitions: 0, republished: 0, usagePaid: 0, usageUnpaid: 0 };
    const batch = this.config.billing.renewalScanBatch;
    // each subscription leaves the due set once looked at (next_action_at moves past now), so this ends
    for (;;) {
      const changes = await withTransaction(
        this.db,
        async (tx) => {
          const due = await this.subscriptions.lockDue(tx, now, batch);
          const inFlight = await this.subscriptions.inFlightCharges(tx, due);
          const changes = due.map((s) => {
            const change = new Change(
              s,
              inFlight.filter((c) => c.merchantId === s.merchantId && c.subscriptionId === s.id),
            );
            try {
              advance(change, now);
              return change;
            } catch (error) {
              // one subscription the rules refuse must not stop every renewal behind it: it is parked for an hour, logged
              this.logger.error(`subscription ${s.id} of merchant ${s.merchantId} could not be advanced: ${(error as Error).message}`);
              const parked = new Change(s);
              parked.record = { ...s, nextActionAt: new Date(now.getTime() + PARK_MS) };
              return parked;
            }
          });
          await this.subscriptions.save(tx, changes);
          return changes;
        },
        { timeout: 60_000, maxWait: 10_000 },
      );
      await this.outbox.publish(changes, now);
      result.scanned += changes.length;
      result.charged += changes.reduce((n, c) => n + c.commands.filter((k) => k.type === 'charge').length, 0);
      result.transitions += changes.reduce((n, c) => n + c.transitions.length, 0);
      if (changes.length < batch) break;
    }
    // the usage charges the batches recorded, and those still unpaid, after the commits
    const usage = await this.usage.collect(now);
    result.usagePaid = usage.paid;
    result.usageUnpaid = usage.unpaid;
    result.republished = await this.sweep(now);
    return result;
  }

  /** Publishes again what has waited too long for its outcome, and the notices never handed over. */
  async sweep(now: Date): Promise<number> {
    const before = new Date(now.getTime() - this.config.billing.commandRepublishAfterMs);
    const charges = await this.subscriptions.chargesToRepublish(before, SWEEP_LIMIT);
    await this.outbox.republishCommands(
      charges.map((c) => ({
        type: 'charge',
        commandId: c.commandId!,
        subscriptionId: c.subscriptionId,
        merchantId: c.merchantId,
        requestedAt: c.requestedAt.toISOString(),
        periodIndex: c.periodIndex,
        attempt: c.attempt,
        periodStart: c.periodStart.toISOString(),
        periodEnd: c.periodEnd.toISOString(),
      })),
    );
    await this.subscriptions.markRepublished(charges, now);
    const cancels = await this.subscriptions.unconfirmedCancels(before, SWEEP_LIMIT);
    await this.outbox.republishCommands(
      cancels.map((s) => ({
        type: 'cancel',
        commandId: cancelCommandId(s.id, s.cancelAt!),
        subscriptionId: s.id,
        merchantId: s.merchantId,
        requestedAt: s.cancelRequestedAt!.toISOString(),
        at: s.cancelAt!,
        effectiveAt: cancelEffectiveAt(s, s.cancelRequestedAt!).toISOString(),
      })),
    );
    // the refunded period is the last paid one: no later period is charged once the refund's cancel is recorded
    const refunds = await this.subscriptions.requestedRefunds(before, SWEEP_LIMIT);
    await this.outbox.republishCommands(
      refunds.filter((s) => s.lastPaidIndex !== null).map((s) => refundCommand(s, s.lastPaidIndex!, s.refundAmount!, s.cancelRequestedAt!)),
    );
    const notices = await this.subscriptions.unnotified(SWEEP_LIMIT);
    await this.outbox.sendNotices(notices, now);
    if (charges.length)
      this.logger.warn(`${charges.length} charge command(s) had no outcome after ${this.config.billing.commandRepublishAfterMs} ms: published again`);
    return charges.length + cancels.length + refunds.length + notices.length;
  }
}

/**
 * The `subscription-renewals` queue's job scheduler (RENEWAL_SCAN_EVERY_MS), upserted at boot so every replica agrees
 * on one schedule, removed when it is 0.
 */
@Injectable()
export class RenewalSchedule implements OnModuleInit {
  private readonly logger = new Logger('Renewals');

  constructor(
    @Inject(LEDGER_CONFIG) private readonly config: LedgerConfig,
    @InjectQueue(RENEWALS_QUEUE) readonly queue: Queue,
  ) {}

  async onModuleInit(): Promise<void> {
    // BullMQ would wait for Redis without end, and the ledger's API does not need it to boot
    if (!(await whenQueueReady(this.queue))) {
      this.logger.warn('Redis is unreachable: the renewal schedule is left as it is (the next boot or replica sets it)');
      return;
    }
    const every = this.config.billing.renewalScanEveryMs;
    if (every > 0) await this.queue.upsertJobScheduler(RENEWAL_SCHEDULER_ID, { every }, { name: RENEWAL_SCHEDULER_ID, data: {}, opts: RENEWAL_JOB_OPTIONS });
    else await this.queue.removeJobScheduler(RENEWAL_SCHEDULER_ID);
  }
}

/** Runs the scans one at a time per process; a tick that finds another scan running on another replica shares the rows. */
@Processor(RENEWALS_QUEUE, { concurrency: 1 })
export class RenewalProcessor extends WorkerHost {
  private readonly logger = new Logger('Renewals');

  constructor(private readonly scheduler: RenewalScheduler) {
    super();
  }

  async process(_job: Job): Promise<ScanResult> {
    return this.scheduler.scan();
  }

  @OnWorkerEvent('failed')
  onFailed(job: Job | undefined, error: Error): void {
    this.logger.warn(`renewal scan ${job?.id} failed: ${error.message}`);
  }

  @OnWorkerEvent('error')
  onError(error: Error): void {
    this.logger.debug(`worker: ${error.message}`);
  }
}
