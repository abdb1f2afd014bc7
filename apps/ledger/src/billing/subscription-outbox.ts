import { InjectQueue } from '@nestjs/bullmq';
import { Injectable, Logger } from '@nestjs/common';
import type { DefaultJobOptions, Queue } from 'bullmq';
import {
  MERCHANT_NOTICES_QUEUE,
  SUBSCRIPTION_COMMANDS_QUEUE,
  subscriptionCommandJobId,
  type MerchantNoticeMessage,
  type MerchantNoticeType,
  type SubscriptionCommand,
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
 * `merchant-notices`, each under a deterministic job id. Sending happens after the commit, so a crash in between
 * loses nothing for good: the scheduler's sweep publishes again the charges without an outcome and the notices not
 * marked sent (SubscriptionsRepository.chargesToRepublish, unnotified).
 */
@Injectable()
export class SubscriptionOutbox {
  private readonly logger = new Logger('Subscriptions');

  constructor(
    @InjectQueue(SUBSCRIPTION_COMMANDS_QUEUE) private readonly commands: Queue<SubscriptionCommand>,
    @InjectQueue(MERCHANT_NOTICES_QUEUE) private readonly notices: Queue<MerchantNoticeMessage>,
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

  async sendCommands(commands: SubscriptionCommand[]): Promise<void> {
    if (!commands.length) return;
    await this.commands.addBulk(
      commands.map((data) => ({ name: data.type, data, opts: { ...SUBSCRIPTION_COMMAND_JOB_OPTIONS, jobId: subscriptionCommandJobId(data) } })),
    );
  }

  async sendNotices(transitions: TransitionNotice[], now: Date): Promise<void> {
    const told = transitions.filter((t) => t.noticeType !== null);
    if (!told.length) return;
    await this.notices.addBulk(
      told.map((t) => {
        const noticeId = transitionNoticeId(t.subscriptionId, t.version);
        const data: MerchantNoticeMessage = {
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
        return { name: data.type, data, opts: { jobId: `notice-${noticeId}` } };
      }),
    );
    await this.subscriptions.markNotified(
      told.map((t) => ({ merchantId: t.merchantId, subscriptionId: t.subscriptionId, version: t.version })),
      now,
    );
  }
}
