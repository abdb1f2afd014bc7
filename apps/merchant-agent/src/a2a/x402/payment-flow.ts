import { Inject, Injectable } from '@nestjs/common';
import { TaskState, type Message } from '@a2a-js/sdk';
import type { FacilitatorClient } from '@x402/core/server';
import type { PaymentPayload, SettleResponse, VerifyResponse } from '@x402/core/types';
import { X402Reason } from '@mp/x402';
import { PrepaidLedgerError, type BalanceView, type PrepaidLedger } from '../../prepaid/prepaid-ledger';
import { PREPAID_LEDGER } from '../prepaid-flow';
import { SKILLS, type Skill } from '../skills';
import { dataPart } from '../task-events';
import type { TaskTurn } from '../task-turn';
import { errorCodeFor } from './error-codes';
import { X402_METADATA, x402Metadata, type X402PaymentStatus } from './extension';
import { isUnknownOutcome, settlePayment, verifyPayment, X402_FACILITATOR } from './facilitator';
import { TaskPayments, type PaymentStatus, type TaskPayment, type Transition } from './payment.repository';
import { checkSubmission, type SubmissionCheck } from './submitted-payment';

/** Payloads a task takes before it fails: a buyer may correct a rejected one (a new signature, more funds). */
export const MAX_PAYMENT_ATTEMPTS = 3;

const X402_STATUS: Partial<Record<PaymentStatus, X402PaymentStatus>> = {
  required: 'payment-required',
  submitted: 'payment-submitted',
  verified: 'payment-verified',
  // verified, its settlement's outcome not known yet
  settling: 'payment-verified',
  completed: 'payment-completed',
  failed: 'payment-failed',
  rejected: 'payment-rejected',
};

/** A payment moved on by someone else (another replica's sweep, a concurrent turn) while this one meant to move it. */
export class PaymentMovedError extends Error {
  constructor(taskId: string, from: PaymentStatus) {
    super(`the payment of task ${taskId} left ${from} while this turn held it`);
    this.name = 'PaymentMovedError';
  }
}

interface AttemptFailure {
  reason: string;
  message: string;
  payer?: string;
}

/**
 * The a2a-x402 payment of a paid task, one follow-up message at a time (spec v0.2 §5, §7.1, §9): an offer repeated,
 * declined, or paid. A payment is verified by the facilitator, then settled before or after the skill's work as the
 * skill says, and the task completes with every receipt. Failures before settlement leave the task input-required
 * for another attempt; a failed settlement fails it.
 */
@Injectable()
export class PaymentFlow {
  /** Verifications started ahead for a request (by its ServerCallContext): its payment message's, taken once by submit. */
  private readonly verifiedAhead = new WeakMap<object, { messageId: string; verifying: Promise<VerifyResponse | undefined> }>();

  constructor(
    private readonly payments: TaskPayments,
    @Inject(X402_FACILITATOR) private readonly facilitator: FacilitatorClient,
    @Inject(SKILLS) private readonly skills: ReadonlyMap<string, Skill>,
    @Inject(PREPAID_LEDGER) private readonly prepaid: PrepaidLedger | null,
  ) {}

  /**
   * Starts, for a message on a paid task, the reads its turn begins with, while the SDK loads and saves the task
   * (`request`: its ServerCallContext): the task's payment (TaskPayments.readAhead), and for a payment the facilitator's
   * /verify of it. Both are reads; the turn's claim still decides, and a verification is used only by the turn whose
   * claim wins.
   */
  ahead(message: Message, request: object): void {
    if (!message.taskId) return;
    const reading = this.payments.readAhead(message.taskId, request);
    if (message.metadata?.[X402_METADATA.status] !== 'payment-submitted') return;
    const verifying = reading.then((payment) => (payment ? this.verification(payment, message).verifying : undefined));
    verifying.catch(() => undefined); // submit awaits it; verifyPayment itself never rejects
    this.verifiedAhead.set(request, { messageId: message.messageId, verifying });
  }

  /** Asks for the payment, as a new task does and as any message without a payment does again. */
  async remind(turn: TaskTurn, payment: TaskPayment): Promise<void> {
    if (payment.status !== 'required') return this.refuse(turn, payment.taskId);
    const [offered] = payment.offer.accepts;
    turn.start(
      TaskState.TASK_STATE_INPUT_REQUIRED,
      `Payment required for ${payment.skill}: ${offered.amount} atomic units of ${offered.asset} on ${offered.network}. Sign x402.payment.required and send it as x402.payment.payload with x402.payment.status payment-submitted.`,
      x402Metadata('payment-required', { required: payment.offer }),
    );
  }

  async reject(turn: TaskTurn, payment: TaskPayment): Promise<void> {
    if (!(await this.payments.transition(payment.taskId, ['required'], 'rejected'))) return this.refuse(turn, payment.taskId);
    turn.start(TaskState.TASK_STATE_FAILED, 'The payment was declined; nothing was charged.', x402Metadata('payment-rejected'));
  }

  /** `request`: the ServerCallContext of the message's request, whose verification may have started ahead. */
  async submit(turn: TaskTurn, payment: TaskPayment, message: Message, request?: object): Promise<void> {
    const ahead = request && this.verifiedAhead.get(request);
    if (ahead) this.verifiedAhead.delete(request);
    // Asked while the payment is claimed, if not already (verification moves nothing, and verifyPayment never
    // rejects); its answer is used only by the turn whose claim wins.
    const { check, verifying } = this.verification(payment, message, ahead?.messageId === message.messageId ? ahead.verifying : undefined);
    const claim = await this.payments.claim(
      payment.taskId,
      check.ok ? { messageId: message.messageId, payer: check.payer, nonce: check.nonce, payload: check.payload } : undefined,
    );
    if (claim.kind === 'not-awaiting') return this.refuse(turn, payment.taskId);
    turn.start(TaskState.TASK_STATE_WORKING, 'Payment received; verifying it.', x402Metadata('payment-submitted'));
    if (claim.kind === 'replayed') {
      return this.attemptFailed(turn, payment, claim.attempts, {
        reason: X402Reason.exactEvmNonceAlreadyUsed,
        message: 'this authorization was submitted before; sign a new one',
      });
    }
    if (!check.ok) return this.attemptFailed(turn, payment, claim.attempts, check);

    const verified = await verifying!; // started for every check.ok
    const [requirements] = payment.offer.accepts;
    if (!verified.isValid) {
      const reason = verified.invalidReason ?? X402Reason.invalidPayload;
      return this.attemptFailed(turn, payment, claim.attempts, { reason, message: verified.invalidMessage ?? reason, payer: verified.payer });
    }
    // Recorded while the settlement is asked for (one round trip off the paid request's path): a turn that stops before
    // the record is settled by PendingSettlements all the same, from `submitted` with its authorization.
    const recorded = this.move(payment.taskId, 'submitted', 'verified', { payer: verified.payer ?? check.payer }).then(() =>
      turn.status(TaskState.TASK_STATE_WORKING, 'Payment verified.', x402Metadata('payment-verified')),
    );
    recorded.catch(() => undefined); // awaited below; handled here in case the work throws first

    // after-work: a skill that fails costs nothing; before-work: nothing is done for a payment that does not settle.
    const output = payment.settleTiming === 'after-work' ? this.work(payment) : undefined;
    const [settlement] = await Promise.all([settlePayment(this.facilitator, check.payload, requirements), recorded]);
    if (settlement.success) {
      await this.complete(turn, payment, 'verified', settlement, output);
      return;
    }
    if (isUnknownOutcome(settlement)) return this.settlementPending(turn, payment, settlement);
    return this.settlementFailed(turn, payment, 'verified', settlement);
  }

  /**
   * Asks the facilitator again about a settling payment (PendingSettlements), with the authorization it was paid with
   * (the facilitator settles one authorization once and answers again with its outcome): the task completes or fails
   * once the outcome is known; while it is not, nothing changes and false is returned.
   */
  async followUp(turn: TaskTurn, payment: TaskPayment, payload: PaymentPayload): Promise<boolean> {
    const [requirements] = payment.offer.accepts;
    const settlement = await settlePayment(this.facilitator, payload, requirements, 1);
    if (settlement.success) return this.complete(turn, payment, 'settling', settlement);
    else if (isUnknownOutcome(settlement)) return false;
    else await this.settlementFailed(turn, payment, 'settling', settlement);
    return true;
  }

  /**
   * A payment that a stopped turn left `submitted` with no authorization recorded for it (a malformed or replayed
   * payload; PendingSettlements): the attempt fails as that turn would have failed it, and the buyer may pay again.
   */
  async abandonAttempt(turn: TaskTurn, payment: TaskPayment): Promise<void> {
    return this.attemptFailed(turn, payment, payment.attempts, {
      reason: X402Reason.invalidPayload,
      message: 'the agent stopped before answering this payment, which carried no authorization it could use',
    });
  }

  /**
   * The submission's check, and its /verify when it passes: the one started ahead for this message if given (asked
   * again only if ahead found no payment to check), else asked now.
   */
  private verification(
    payment: TaskPayment,
    message: Message,
    started?: Promise<VerifyResponse | undefined>,
  ): { check: SubmissionCheck; verifying?: Promise<VerifyResponse> } {
    const check = checkSubmission(message.metadata?.[X402_METADATA.payload], payment.offer);
    if (!check.ok) return { check };
    const ask = () => verifyPayment(this.facilitator, check.payload, payment.offer.accepts[0]);
    return { check, verifying: started ? started.then((verified) => verified ?? ask()) : ask() };
  }

  private work(payment: TaskPayment) {
    const skill = this.skills.get(payment.skill);
    if (!skill) throw new Error(`task ${payment.taskId} was offered for skill ${payment.skill}, which this agent no longer has`);
    return skill.run(payment.input);
  }

  /**
   * A settled payment: the task completes with the skill's output. A top-up is credited to the payer's balance first;
   * while the ledger does not answer, the payment waits in `settling` (PendingSettlements asks again, and the credit
   * is once per transaction however often it is asked) and false is returned.
   */
  private async complete(
    turn: TaskTurn,
    payment: TaskPayment,
    from: PaymentStatus,
    settlement: SettleResponse,
    output?: ReturnType<Skill['run']>,
  ): Promise<boolean> {
    const [requirements] = payment.offer.accepts;
    let credited: BalanceView | undefined;
    if (this.skills.get(payment.skill)?.topUp) {
      credited = await this.credit(payment, settlement);
      if (!credited) {
        if (from !== 'verified') return false;
        await this.move(payment.taskId, 'verified', 'settling', { transaction: settlement.transaction });
        turn.status(
          TaskState.TASK_STATE_WORKING,
          `Paid in transaction ${settlement.transaction}; crediting it to your balance waits for the ledger. This task completes once it is credited.`,
          x402Metadata('payment-verified'),
        );
        return false;
      }
    }
    // The payment is recorded completed while the artifact is saved (the money has moved: the facilitator said so).
    const completed = this.move(payment.taskId, from, 'completed', {
      transaction: settlement.transaction,
      receipt: settlement,
      ...(settlement.payer && { payer: settlement.payer }),
    });
    completed.catch(() => undefined); // awaited below; handled here in case the work throws first
    const { name, part } = credited ? { name: 'balance', part: dataPart(credited) } : (output ?? this.work(payment));
    turn.artifact(name, part);
    const paid = await completed;
    turn.status(
      TaskState.TASK_STATE_COMPLETED,
      `Paid: ${requirements.amount} atomic units in transaction ${settlement.transaction} on ${settlement.network}. Your ${payment.skill} is in the artifacts.`,
      x402Metadata('payment-completed', { receipts: paid.receipts }),
    );
    return true;
  }

  /** The top-up's amount credited to its payer; undefined while the ledger does not answer. */
  private async credit(payment: TaskPayment, settlement: SettleResponse): Promise<BalanceView | undefined> {
    const payer = settlement.payer ?? payment.payer;
    if (!this.prepaid || !payer) throw new Error(`task ${payment.taskId}: a top-up needs the prepaid ledger and the payer`);
    try {
      return await this.prepaid.topUp(payer.toLowerCase(), payment.offer.accepts[0].amount, settlement.transaction);
    } catch (error) {
      if (error instanceof PrepaidLedgerError) return undefined;
      throw error;
    }
  }

  /** A payload that did not verify: nothing moved, so the buyer may sign again, until the attempts run out. */
  private async attemptFailed(turn: TaskTurn, payment: TaskPayment, attempts: number, failure: AttemptFailure): Promise<void> {
    const error = errorCodeFor(failure.reason);
    const [{ network }] = payment.offer.accepts;
    const receipt: SettleResponse = {
      success: false,
      errorReason: failure.reason,
      errorMessage: failure.message,
      transaction: '',
      network,
      ...(failure.payer && { payer: failure.payer }),
    };
    const final = attempts >= MAX_PAYMENT_ATTEMPTS;
    const updated = await this.move(payment.taskId, 'submitted', final ? 'failed' : 'required', { error, receipt });
    const text = `Payment failed (${error}): ${failure.message}. Attempt ${attempts} of ${MAX_PAYMENT_ATTEMPTS}; nothing was charged.`;
    const failed = x402Metadata('payment-failed', { error, receipts: updated.receipts });
    if (final) return turn.status(TaskState.TASK_STATE_FAILED, text, failed);
    turn.status(TaskState.TASK_STATE_WORKING, text, failed);
    turn.status(
      TaskState.TASK_STATE_INPUT_REQUIRED,
      `${text} Sign x402.payment.required again to retry.`,
      x402Metadata('payment-required', { required: payment.offer, error, receipts: updated.receipts }),
    );
  }

  private async settlementFailed(turn: TaskTurn, payment: TaskPayment, from: PaymentStatus, settlement: SettleResponse): Promise<void> {
    const error = errorCodeFor(settlement.errorReason);
    const updated = await this.move(payment.taskId, from, 'failed', {
      error,
      receipt: settlement,
      ...(settlement.transaction && { transaction: settlement.transaction }),
    });
    turn.status(
      TaskState.TASK_STATE_FAILED,
      `The payment did not settle (${error}): ${settlement.errorMessage ?? settlement.errorReason}.`,
      x402Metadata('payment-failed', { error, receipts: updated.receipts }),
    );
  }

  /**
   * The facilitator could not tell yet whether the money moved (a transaction still unmined, the facilitator away):
   * the task stays working, and PendingSettlements asks again until it can tell, then completes or fails the task.
   */
  private async settlementPending(turn: TaskTurn, payment: TaskPayment, settlement: SettleResponse): Promise<void> {
    await this.move(payment.taskId, 'verified', 'settling', { ...(settlement.transaction && { transaction: settlement.transaction }) });
    const sent = settlement.transaction ? ` (transaction ${settlement.transaction})` : '';
    turn.status(
      TaskState.TASK_STATE_WORKING,
      `Payment verified; its settlement${sent} is not confirmed yet. This task completes once it is: follow it with GetTask or SubscribeToTask.`,
      x402Metadata('payment-verified'),
    );
  }

  /** A message that found the payment past `required` (paid, being paid, or closed) changes nothing. */
  private async refuse(turn: TaskTurn, taskId: string): Promise<void> {
    const current = await this.payments.find(taskId);
    const status = current && X402_STATUS[current.status];
    turn.reply(`This task takes one payment, and its payment is ${current?.status ?? 'gone'}: this message changed nothing.`, status && x402Metadata(status));
  }

  /** A move only this turn can make: it holds the claim on the payment. */
  private async move(taskId: string, from: PaymentStatus, to: PaymentStatus, change: Transition): Promise<TaskPayment> {
    const moved = await this.payments.transition(taskId, [from], to, change);
    if (!moved) throw new PaymentMovedError(taskId, from);
    return moved;
  }
}
