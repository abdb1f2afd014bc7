import { InjectQueue } from '@nestjs/bullmq';
import { Injectable, Logger } from '@nestjs/common';
import type { DefaultJobOptions, Queue } from 'bullmq';
import {
  CHARGE_BATCH_JOB_NAME,
  chargeBatchJobId,
  inBatches,
  MAX_CHARGES_PER_JOB,
  MAX_NOTICES_PER_JOB,
  MERCHANT_NOTICES_QUEUE,
  merchantNoticeBatchJobId,
  merchantNoticeJobId,
  NOTICE_BATCH_JOB_NAME,
  SUBSCRIPTION_COMMANDS_QUEUE,
  subscriptionCommandJobId,
  type ChargeCommand,
  type MerchantNoticeJobData,
  type MerchantNoticeMessage,
  type MerchantNoticeType,
  type SubscriptionCommand,
  type SubscriptionCommandJobData,
} from '@mp/clients';
import type { Change } from './subscription-engine';
import { SubscriptionsRepository } from './subscriptions.repository';

/** A command the facilitator does not take at once is retried with backoff; done ones are kept a week, so their ids dedupe. */
export const SUBSCRIPTION_COMMAND_JOB_OPTIONS = {
  attempts: 10,
  backoff: { type: 'exponential', delay: 1_000 },
  removeOnComplete: { age: 7 * 24 * 3600 },
  removeOnFail: 1_000,
} satisfies DefaultJobOptions;

export interface TransitionNotice {
  merchantId: string;
  subscriptionId: string;
  version: number;
  event: string;
  fromState: string;
  toState: string;
  at: Date;
  cause: unknown;
  noticeType: string | null;
}

/** Each transition is told once: the same id however often it is published. */
export const transitionNoticeId = (subscriptionId: string, version: number) => `subscription-${subscriptionId}-${version}`;

/**
 * Sends what a committed Change asks for: its commands on `subscription-commands` and its transitions' notices on
 * `merchant-notices`, under deterministic job ids; charges and notices in batch jobs of at most 100 (a renewal scan's
 * thousands cost a few Redis round trips per hundred, on both sides, not per renewal). Sending happens after the
 * commit, so a crash in between loses nothing for good: the scheduler's sweep publishes again the charges without an
 * outcome (one job each, under the command's own job id) and the notices not marked sent
 * (SubscriptionsRepository.chargesToRepublish, unnotified).
 */
@Injectable()
export class SubscriptionOutbox {
  private readonly logger = new Logger('Subscriptions');

  constructor(
    @InjectQueue(SUBSCRIPTION_COMMANDS_QUEUE) private readonly commands: Queue<SubscriptionCommandJobData>,
    @InjectQueue(MERCHANT_NOTICES_QUEUE) private readonly notices: Queue<MerchantNoticeJobData>,
    private readonly subscriptions: SubscriptionsRepository,
  ) {}

  async publish(changes: Change[], now: Date): Promise<void> {
    const commands = changes.flatMap((c) => c.commands);
    const transitions = changes.flatMap((c) =>
      c.transitions.map((t) => ({ ...t, merchantId: c.record.merchantId, subscriptionId: c.record.id, cause: t.cause as unknown })),
    );
    try {
      await this.sendCommands(commands);
      await this.sendNotices(transitions, now);
    } catch (error) {
      // the sweep sends them again
      this.logger.warn(`publishing ${commands.length} command(s) and ${transitions.length} notice(s) failed: ${(error as Error).message}`);
    }
  }

  /** Charges in batch jobs of at most MAX_CHARGES_PER_JOB; cancels and refunds (rare) one job each. */
  async sendCommands(commands: SubscriptionCommand[]): Promise<void> {
    const charges = commands.filter((c): c is ChargeCommand => c.type === 'charge');
    const others = commands.filter((c) => c.type !== 'charge');
    const jobs = [
      ...inBatches(charges, MAX_CHARGES_PER_JOB).map((batch) =>
        batch.length === 1
          ? single(batch[0]!)
          : { name: CHARGE_BATCH_JOB_NAME, data: { commands: batch }, opts: { ...SUBSCRIPTION_COMMAND_JOB_OPTIONS, jobId: chargeBatchJobId(batch) } },
      ),
      ...others.map(single),
    ];
    if (jobs.length) await this.commands.addBulk(jobs);
  }

  /**
   * Publishes commands again, one job each under the command's own job id: BullMQ drops one whose job it still holds
   * (waiting, delayed as a retry the facilitator split off a batch, or done), whichever job first carried it.
   */
  async republishCommands(commands: SubscriptionCommand[]): Promise<void> {
    if (commands.length) await this.commands.addBulk(commands.map(single));
  }

  async sendNotices(transitions: TransitionNotice[], now: Date): Promise<void> {
    const told = transitions.filter((t) => t.noticeType !== null);
    if (!told.length) return;
    const messages = told.map((t): MerchantNoticeMessage => {
      const noticeId = transitionNoticeId(t.subscriptionId, t.version);
      return {
        noticeId,
        merchantId: t.merchantId,
        type: t.noticeType as MerchantNoticeType,
        createdAt: t.at.toISOString(),
        data: {
          subscriptionId: t.subscriptionId,
          event: t.event,
          fromState: t.fromState,
          state: t.toState,
          version: t.version,
          at: t.at.toISOString(),
          cause: t.cause,
        },
      };
    });
    // in batches: each notice id is still delivered once, whichever job carries it
    await this.notices.addBulk(
      inBatches(messages, MAX_NOTICES_PER_JOB).map((batch) =>
        batch.length === 1
          ? { name: batch[0]!.type, data: batch[0]!, opts: { jobId: merchantNoticeJobId(batch[0]!.noticeId) } }
          : { name: NOTICE_BATCH_JOB_NAME, data: { notices: batch }, opts: { jobId: merchantNoticeBatchJobId(batch) } },
      ),
    );
    await this.subscriptions.markNotified(
      told.map((t) => ({ merchantId: t.merchantId, subscriptionId: t.subscriptionId, version: t.version })),
      now,
    );
  }
}

/** A command's own job, under its command id. */
function single(command: SubscriptionCommand) {
  return { name: command.type, data: command, opts: { ...SUBSCRIPTION_COMMAND_JOB_OPTIONS, jobId: subscriptionCommandJobId(command) } };
}
