import { Inject, Injectable } from '@nestjs/common';
import { TaskState, type Message } from '@a2a-js/sdk';
import { MppFacilitatorError, type MppChallenge, type MppFacilitatorClient } from '@mp/clients';
import { MERCHANT_CONFIG, type MerchantConfig } from '../merchant.config';
import { LedgerUnavailableError, type PayerProof, type SubscriptionEntitlements } from '../subscriptions/entitlements';
import { grantExpiresAt, subscriptionTerms, termsForCredential } from '../subscriptions/subscription-terms';
import type { Skill } from './skills';
import { dataPart } from './task-events';
import type { TaskTurn } from './task-turn';

export const MPP_FACILITATOR = Symbol('MPP_FACILITATOR');
export const SUBSCRIPTION_ENTITLEMENTS = Symbol('SUBSCRIPTION_ENTITLEMENTS');

/** The skill that sells the subscription (when MERCHANT_SUBSCRIPTION_PLAN_ID is set). */
export const SUBSCRIBE_SKILL = 'subscribe';
/** Where the subscription's challenge is issued: every A2A subscribe task, each bound by its task id. */
export const A2A_SUBSCRIBE_RESOURCE = `a2a:${SUBSCRIBE_SKILL}`;
/** The resource a payer's proof names to be served `skill` as a subscriber. */
export const a2aSkillResource = (skillId: string) => `a2a:${skillId}`;

/**
 * MPP carried in A2A message metadata (our vocabulary; the a2a-x402 extension has no subscription): the agent asks
 * with `mpp.payment.required` (the challenges as JSON), the buyer answers on the same task with `mpp.payment.credential`
 * (the `Payment …` credential), and the task completes with `mpp.payment.receipt`. A subscriber proves itself on a
 * covered skill with `mpp.subscription.proof` ({payer, deadline, signature}, @mp/chain accessMessage).
 */
export const MPP_METADATA = {
  status: 'mpp.payment.status',
  required: 'mpp.payment.required',
  credential: 'mpp.payment.credential',
  receipt: 'mpp.payment.receipt',
  error: 'mpp.payment.error',
  proof: 'mpp.subscription.proof',
  subscription: 'mpp.subscription',
} as const;

export type SubscriberCheck = { served: true; subscriptionId: string | null; payer: string } | { served: false; why: string };

/**
 * The A2A subscribe skill through input-required, and the subscriber check of the skills the subscription covers.
 * Nothing is stored here: the challenge is bound to the task (opaque.task) and to our HMAC, and the facilitator
 * settles one credential once (the same credential again answers the same receipt), so a repeated or concurrent
 * answer cannot subscribe twice.
 */
@Injectable()
export class SubscriptionFlow {
  constructor(
    @Inject(MERCHANT_CONFIG) private readonly config: MerchantConfig,
    @Inject(MPP_FACILITATOR) private readonly facilitator: MppFacilitatorClient,
    @Inject(SUBSCRIPTION_ENTITLEMENTS) private readonly entitlements: SubscriptionEntitlements | null,
  ) {}

  /** A subscribe task waits for its credential: the challenge (fresh each time it is asked) in its status message. */
  async ask(turn: TaskTurn, opening: boolean, failure?: { detail: string; error: string; challenges?: MppChallenge[] }): Promise<void> {
    const subscription = this.subscriptionConfig();
    let challenges = failure?.challenges;
    if (!challenges?.length) {
      const terms = subscriptionTerms(this.config, subscription, A2A_SUBSCRIBE_RESOURCE, grantExpiresAt(subscription, new Date()), { task: turn.task.id });
      challenges = (await this.facilitator.challenges(terms)).challenges;
    }
    const { period } = subscription;
    const text =
      `${failure ? `The subscription was not activated (${failure.error}): ${failure.detail}. ` : ''}` +
      `Subscription to ${subscription.product}: ${subscription.amount} atomic units of ${this.config.price.asset} every ${period.count} ${period.unit}(s). ` +
      `Answer one challenge of ${MPP_METADATA.required} on this task with the credential in ${MPP_METADATA.credential}.`;
    const metadata = {
      [MPP_METADATA.status]: 'payment-required',
      [MPP_METADATA.required]: { challenges },
      ...(failure && { [MPP_METADATA.error]: failure.error }),
    };
    if (opening) return turn.start(TaskState.TASK_STATE_INPUT_REQUIRED, text, metadata);
    turn.status(TaskState.TASK_STATE_INPUT_REQUIRED, text, metadata);
  }

  /** A follow-up on a subscribe task: its credential settled (activation), or the challenge asked again. */
  async answer(turn: TaskTurn, message: Message): Promise<void> {
    const credential = message.metadata?.[MPP_METADATA.credential];
    if (typeof credential !== 'string' || !/^payment\s/i.test(credential.trim())) return this.ask(turn, true);
    const subscription = this.subscriptionConfig();
    turn.start(TaskState.TASK_STATE_WORKING, 'Subscription credential received; activating it.', { [MPP_METADATA.status]: 'payment-submitted' });
    let settled;
    try {
      const terms = termsForCredential(this.config, subscription, A2A_SUBSCRIBE_RESOURCE, credential, new Date(), { task: turn.task.id });
      settled = await this.facilitator.settle(credential, terms);
    } catch (error) {
      const detail = error instanceof MppFacilitatorError ? error.message : `the payment facilitator is unreachable: ${(error as Error).message}`;
      // The credential may still be good: the buyer may send it again (the facilitator answers a settled one with its receipt).
      return this.ask(turn, false, { detail, error: 'upstream_unavailable' });
    }
    if (!settled.ok)
      return this.ask(turn, false, {
        detail: settled.problem.detail ?? settled.problem.title,
        error: settled.problem.type,
        challenges: settled.problem.challenges,
      });
    const subscriptionId = (settled.receipt.subscriptionId as string | undefined) ?? null;
    turn.artifact('subscription', dataPart({ subscriptionId, product: subscription.product, payer: settled.payer ?? null, receipt: settled.receipt }));
    turn.status(
      TaskState.TASK_STATE_COMPLETED,
      `Subscribed to ${subscription.product}: subscription ${subscriptionId}. The receipt is in ${MPP_METADATA.receipt}.`,
      {
        [MPP_METADATA.status]: 'payment-completed',
        [MPP_METADATA.receipt]: settled.receipt,
      },
    );
  }

  /** Whether `skill` is covered by the subscription. */
  covers(skill: Skill): boolean {
    return this.entitlements !== null && this.config.subscription!.skills.includes(skill.id);
  }

  /** Whether the message proves a payer the ledger entitles now (undefined: it carries no proof at all). */
  async subscriber(skill: Skill, message: Message): Promise<SubscriberCheck | undefined> {
    const raw = message.metadata?.[MPP_METADATA.proof];
    if (raw === undefined || !this.entitlements || !this.covers(skill)) return undefined;
    const proof = payerProofOf(raw);
    if (!proof) return { served: false, why: `${MPP_METADATA.proof} must be {payer, deadline, signature} strings` };
    const proven = await this.entitlements.prove(proof, a2aSkillResource(skill.id));
    if (!proven.ok) return { served: false, why: proven.problem };
    try {
      const entitlement = await this.entitlements.of(proven.payer);
      if (!entitlement.entitled)
        return { served: false, why: `${proven.payer} is not entitled to ${this.entitlements.subscription.product} (${entitlement.reason})` };
      return { served: true, subscriptionId: entitlement.subscriptionId, payer: proven.payer };
    } catch (error) {
      if (error instanceof LedgerUnavailableError) return { served: false, why: error.message };
      throw error;
    }
  }

  private subscriptionConfig() {
    const subscription = this.config.subscription;
    if (!subscription) throw new Error('the subscribe skill runs only with MERCHANT_SUBSCRIPTION_PLAN_ID set');
    return subscription;
  }
}

/** Whether a message carries a subscriber proof (checked before a paid skill demands the x402 extension). */
export function carriesSubscriberProof(message: Message): boolean {
  return message.metadata?.[MPP_METADATA.proof] !== undefined;
}

/** A payer proof in message metadata: {payer, deadline, signature} strings of the right shapes, else undefined. */
export function payerProofOf(raw: unknown): PayerProof | undefined {
  if (typeof raw !== 'object' || raw === null) return undefined;
  const { payer, deadline, signature } = raw as Record<string, unknown>;
  if (typeof payer !== 'string' || !/^0x[0-9a-fA-F]{40}$/.test(payer)) return undefined;
  if (typeof deadline !== 'string' || !/^[0-9]{1,12}$/.test(deadline)) return undefined;
  if (typeof signature !== 'string' || !/^0x[0-9a-fA-F]+$/.test(signature)) return undefined;
  return { payer, deadline, signature };
}
