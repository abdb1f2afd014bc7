import { Inject, Injectable } from '@nestjs/common';
import { TaskState, type Message } from '@a2a-js/sdk';
import { spendMessage } from '@mp/chain';
import { meteredCall } from '../prepaid/metered-call';
import type { PrepaidLedger } from '../prepaid/prepaid-ledger';
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

/**
 * A metered skill over A2A, paid from the caller's prepaid balance with no payment step per call (meteredCall): the
 * payer signs this one call (its message id), and a short balance fails the task with the top-up it needs.
 */
@Injectable()
export class PrepaidFlow {
  constructor(@Inject(PREPAID_LEDGER) private readonly ledger: PrepaidLedger | null) {}

  async serve(turn: TaskTurn, skill: Skill & { metered: NonNullable<Skill['metered']> }, input: string, message: Message): Promise<void> {
    const fail = (error: string, text: string, extra: Record<string, unknown> = {}) =>
      turn.start(TaskState.TASK_STATE_FAILED, text, { [PREPAID_METADATA.error]: error, ...extra });
    if (!this.ledger) return fail('ledger_unavailable', 'This agent keeps no prepaid balances.');
    const resource = a2aSkillResource(skill.id);
    const proof = payerProofOf(message.metadata?.[PREPAID_METADATA.proof]);
    if (!proof)
      return fail(
        'proof_required',
        `${skill.id} is paid from your prepaid balance: send ${PREPAID_METADATA.proof} {payer, deadline, signature}, your EIP-191 signature over "${spendMessage(resource, message.messageId, '<deadline>')}".`,
      );
    const outcome = await meteredCall(this.ledger, {
      resource,
      callId: message.messageId,
      proof,
      unitPrice: BigInt(skill.metered.unitPrice),
      maxUnits: skill.metered.maxUnits,
      run: () => {
        const output = skill.run(input);
        return { output, units: output.units ?? 1 };
      },
    });
    if (!outcome.served) {
      if (outcome.error !== 'insufficient_balance') return fail(outcome.error, outcome.detail);
      return fail(outcome.error, `Your ${outcome.detail} with the top-up skill.`, {
        [PREPAID_METADATA.shortfall]: { ...outcome.shortfall, topUpSkill: 'top-up' },
      });
    }
    const { receipt, output } = outcome;
    turn.start(TaskState.TASK_STATE_WORKING, `Running ${skill.id}.`);
    turn.artifact(output.name, output.part);
    const left = receipt.available === undefined ? '' : ` (${receipt.available} left)`;
    turn.status(
      TaskState.TASK_STATE_COMPLETED,
      `Your ${skill.id} is in the artifacts: ${receipt.units} unit(s), ${receipt.charged} atomic units from your prepaid balance${left}.`,
      { [PREPAID_METADATA.receipt]: receipt },
    );
  }
}
