import { createHash } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { TaskState, type Message } from '@a2a-js/sdk';
import { payerProofProblem, spendMessage } from '@mp/chain';
import { PrepaidLedger, PrepaidLedgerError } from '../prepaid/prepaid-ledger';
import { PREPAID_PROOF_KEY, type Skill } from './skills';
import { a2aSkillResource, payerProofOf } from './subscription-flow';
import type { TaskTurn } from './task-turn';

export const PREPAID_LEDGER = Symbol('PREPAID_LEDGER');

/** What a metered call's status carries (our vocabulary, beside the a2a-x402 extension's). */
export const PREPAID_METADATA = {
  proof: PREPAID_PROOF_KEY,
  /** completed: {payer, units, unitPrice, charged, available} */
  receipt: 'mp.prepaid.receipt',
  /** failed: proof_required | proof_invalid | insufficient_balance | ledger_unavailable */
  error: 'mp.prepaid.error',
  /** insufficient_balance: {available, required, topUpNeeded, topUpSkill} */
  shortfall: 'mp.prepaid.shortfall',
} as const;

/** How long a metered call's hold may stay open: the work is quick, a crash leaves the reservation this long. */
const HOLD_SECONDS = 120;

/**
 * A metered skill paid from the caller's prepaid balance, with no payment step per call: the payer names itself by
 * signing this one call (its message id), the agent holds the most the call may cost in the ledger, does the work,
 * captures what it did cost (the rest is released) and only then delivers. The hold's id is the call's, so the same
 * message again is charged once. A short balance fails the task with the top-up it needs.
 */
@Injectable()
export class PrepaidFlow {
  constructor(@Inject(PREPAID_LEDGER) private readonly ledger: PrepaidLedger | null) {}

  async serve(turn: TaskTurn, skill: Skill & { metered: NonNullable<Skill['metered']> }, input: string, message: Message): Promise<void> {
    const fail = (error: string, text: string, extra: Record<string, unknown> = {}) =>
      turn.start(TaskState.TASK_STATE_FAILED, text, { [PREPAID_METADATA.error]: error, ...extra });
    const { ledger } = this;
    if (!ledger) return fail('ledger_unavailable', 'This agent keeps no prepaid balances.');
    const proof = payerProofOf(message.metadata?.[PREPAID_METADATA.proof]);
    if (!proof)
      return fail(
        'proof_required',
        `${skill.id} is paid from your prepaid balance: send ${PREPAID_METADATA.proof} {payer, deadline, signature}, your EIP-191 signature over "${spendMessage(a2aSkillResource(skill.id), message.messageId, '<deadline>')}".`,
      );
    const payer = proof.payer.toLowerCase();
    const problem = await payerProofProblem(
      payer,
      spendMessage(a2aSkillResource(skill.id), message.messageId, proof.deadline),
      proof.signature,
      proof.deadline,
      new Date(),
    );
    if (problem) return fail('proof_invalid', `Not charged: ${problem}.`);

    const { unitPrice, maxUnits } = skill.metered;
    const holdId = callId(skill.id, message.messageId);
    const most = (BigInt(unitPrice) * BigInt(maxUnits)).toString();
    try {
      const hold = await ledger.hold(holdId, payer, most, HOLD_SECONDS);
      if (!hold.held) {
        const shortfall = { available: hold.available, required: hold.required, topUpNeeded: hold.topUpNeeded, topUpSkill: 'top-up' };
        return fail(
          'insufficient_balance',
          `Your prepaid balance has ${hold.available} of the ${hold.required} atomic units a ${skill.id} call may cost: top it up with the top-up skill.`,
          { [PREPAID_METADATA.shortfall]: shortfall },
        );
      }
      let output: ReturnType<Skill['run']>;
      try {
        output = skill.run(input);
      } catch (error) {
        await ledger.release(holdId);
        throw error;
      }
      const units = Math.min(Math.max(output.units ?? 1, 1), maxUnits);
      const charged = (BigInt(unitPrice) * BigInt(units)).toString();
      // captured before anything is delivered: what the buyer gets has been paid for
      await ledger.capture(holdId, charged);
      const available = await ledger.balance(payer).then(
        (balance) => balance.available,
        () => undefined, // paid and captured: delivered even if the balance cannot be read now
      );
      turn.start(TaskState.TASK_STATE_WORKING, `Running ${skill.id}.`);
      turn.artifact(output.name, output.part);
      const left = available === undefined ? '' : ` (${available} left)`;
      turn.status(
        TaskState.TASK_STATE_COMPLETED,
        `Your ${skill.id} is in the artifacts: ${units} unit(s), ${charged} atomic units from your prepaid balance${left}.`,
        { [PREPAID_METADATA.receipt]: { payer, units, unitPrice, charged, ...(available !== undefined && { available }) } },
      );
    } catch (error) {
      if (error instanceof PrepaidLedgerError)
        return fail('ledger_unavailable', `Not served: ${error.message}. Nothing more than a hold that lapses was taken.`);
      throw error;
    }
  }
}

/** The ledger id of one call (the ledger's ids are 1 to 128 of [A-Za-z0-9_:.-]; message ids are the buyer's). */
function callId(skillId: string, messageId: string): string {
  return `a2a:${skillId}:${createHash('sha256').update(messageId).digest('hex').slice(0, 40)}`;
}
