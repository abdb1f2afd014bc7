import { Injectable } from '@nestjs/common';
import type { PaymentPayload, PaymentRequired, SettleResponse } from '@x402/core/types';
import { PrismaService } from '@mp/db';
import type { SettleTiming } from '../skills';
import type { X402ErrorCode } from './error-codes';

/**
 * A task's payment: required (offered) → submitted → verified → completed | failed; or rejected, canceled. A
 * verified payment whose settlement outcome the facilitator could not tell yet is `settling` until it can.
 */
export type PaymentStatus = 'required' | 'submitted' | 'verified' | 'settling' | 'completed' | 'failed' | 'rejected' | 'canceled';

export interface TaskPayment {
  taskId: string;
  skill: string;
  input: string;
  settleTiming: SettleTiming;
  status: PaymentStatus;
  offer: PaymentRequired;
  attempts: number;
  payer: string | null;
  transaction: string | null;
  error: X402ErrorCode | null;
  receipts: SettleResponse[];
}

export interface NewTaskPayment {
  taskId: string;
  skill: string;
  input: string;
  settleTiming: SettleTiming;
  offer: PaymentRequired;
}

export interface Submission {
  messageId: string;
  payer: string;
  nonce: string;
  payload: PaymentPayload;
}

/** claimed: this caller processes the payment; not-awaiting: the task takes no payment now; replayed: the authorization was used before. */
export type Claim = { kind: 'claimed'; attempts: number } | { kind: 'replayed'; attempts: number } | { kind: 'not-awaiting' };

export interface Transition {
  error?: X402ErrorCode;
  payer?: string;
  transaction?: string;
  /** appended to the receipts */
  receipt?: SettleResponse;
}

const columns = (table = '') =>
  ['task_id AS "taskId"', 'skill', 'input', 'settle_timing AS "settleTiming"', 'status', 'offer', 'attempts', 'payer', 'transaction', 'error', 'receipts']
    .map((c) => `${table}${c}`)
    .join(', ');
const COLUMNS = columns();

/**
 * The payments of paid tasks (merchant.a2a_payments). Every change names the status it leaves, so of two replicas or
 * two concurrent messages exactly one moves a payment on; the loser sees nothing returned. The changes are SQL: they
 * keep what the row holds (COALESCE, appended receipts) in the statement that moves it, and the claim and the sweeps
 * compare updated_at with a submission's created_at and with now(), all on the database's clock. A paid task's own
 * statements (offer, find, claim, transitions: 5 per task) are prepared (PrismaService.prepared), each about half
 * the cost of a query through Prisma Client; the sweeps' are not on any request's path.
 */
@Injectable()
export class TaskPayments {
  /** The read started ahead for a request (by its ServerCallContext; a request is about one task), taken once by its find. */
  private readonly ahead = new WeakMap<object, { taskId: string; reading: Promise<TaskPayment | undefined> }>();

  constructor(private readonly db: PrismaService) {}

  async offer(p: NewTaskPayment): Promise<TaskPayment> {
    const [accepts] = p.offer.accepts;
    const [offered] = await this.db.prepared<TaskPayment>(
      'a2a_payment_offer',
      `INSERT INTO merchant.a2a_payments (task_id, skill, input, settle_timing, status, offer, network, asset, pay_to, amount)
       VALUES ($1, $2, $3, $4, 'required', $5::jsonb, $6, $7, $8, $9::numeric)
       RETURNING ${COLUMNS}`,
      [
        p.taskId,
        p.skill,
        p.input,
        p.settleTiming,
        JSON.stringify(p.offer),
        accepts.network,
        accepts.asset.toLowerCase(),
        accepts.payTo.toLowerCase(),
        BigInt(accepts.amount).toString(),
      ],
    );
    return offered;
  }

  /**
   * Starts the read of a task's payment for a request that will ask for it (`request`: its ServerCallContext), so it
   * runs while the SDK loads and saves the task: that request's next find(taskId, request) takes it. What it read may
   * have moved on meanwhile, as any read may; every change is a compare-and-set on the status, which decides.
   */
  readAhead(taskId: string, request: object): Promise<TaskPayment | undefined> {
    const reading = this.find(taskId);
    reading.catch(() => undefined); // its reader gets the error
    this.ahead.set(request, { taskId, reading });
    return reading;
  }

  async find(taskId: string, request?: object): Promise<TaskPayment | undefined> {
    const ahead = request && this.ahead.get(request);
    if (request && ahead?.taskId === taskId) {
      this.ahead.delete(request);
      return ahead.reading;
    }
    const [row] = await this.db.prepared<TaskPayment>('a2a_payment_find', `SELECT ${COLUMNS} FROM merchant.a2a_payments WHERE task_id = $1`, [taskId]);
    return row;
  }

  /**
   * Takes the task's one pending payment for this submission, in one statement: the payment leaves `required`, and
   * a well-formed authorization is recorded, unique per (network, asset, payer, nonce) across all tasks. Without a
   * submission (a malformed payload) only the attempt is counted.
   */
  async claim(taskId: string, submission?: Submission): Promise<Claim> {
    // One statement (the claim's round trips are on the paid request's path): the submission's row is inserted from
    // the claimed payment's, so it exists only if the payment left `required` here, with the same created_at.
    const [claimed] = await this.db.prepared<{ attempts: number; recorded: boolean }>(
      'a2a_payment_claim',
      `WITH claimed AS (
         UPDATE merchant.a2a_payments SET status = 'submitted', attempts = attempts + 1, updated_at = now()
          WHERE task_id = $1 AND status = 'required'
          RETURNING attempts, network, asset
       ), recorded AS (
         INSERT INTO merchant.a2a_payment_submissions (task_id, message_id, network, asset, payer, nonce, payload)
         SELECT $1, $2::text, network, asset, $3::text, $4::text, $5::jsonb FROM claimed WHERE $6::boolean
         ON CONFLICT (network, asset, payer, nonce) DO NOTHING
         RETURNING id
       )
       SELECT attempts, EXISTS (SELECT 1 FROM recorded) AS recorded FROM claimed`,
      [
        taskId,
        submission?.messageId ?? null,
        submission?.payer ?? null,
        submission?.nonce ?? null,
        submission ? JSON.stringify(submission.payload) : null,
        submission !== undefined,
      ],
    );
    if (!claimed) return { kind: 'not-awaiting' };
    if (!submission) return { kind: 'claimed', attempts: claimed.attempts };
    return { kind: claimed.recorded ? 'claimed' : 'replayed', attempts: claimed.attempts };
  }

  /** Moves the payment from one of `from` to `to`; undefined when it was in none of them (someone else moved it). */
  async transition(taskId: string, from: readonly PaymentStatus[], to: PaymentStatus, change: Transition = {}): Promise<TaskPayment | undefined> {
    const rows = await this.db.prepared<TaskPayment>(
      'a2a_payment_transition',
      `UPDATE merchant.a2a_payments
          SET status = $3::text, error = COALESCE($4, error), payer = COALESCE($5, payer), transaction = COALESCE($6, transaction),
              receipts = receipts || $7::jsonb, updated_at = now()
        WHERE task_id = $1 AND status = ANY($2::text[])
        RETURNING ${COLUMNS}`,
      [
        taskId,
        from,
        to,
        change.error ?? null,
        change.payer?.toLowerCase() ?? null,
        change.transaction ?? null,
        JSON.stringify(change.receipt ? [change.receipt] : []),
      ],
    );
    return rows[0];
  }

  /**
   * Takes up to `limit` payments left `submitted` or `verified` for `idleMs` (their turn's process stopped: no live turn
   * holds one that long) to settle them itself: each moves to `settling`, in one statement, so of two replicas only
   * one takes it, and is returned with the authorization it was paid with and the status it was left in. A `submitted` one is taken only when its
   * authorization was recorded by the claim that put it there (same transaction, same created_at): a malformed or
   * replayed payload has none (strandedAttempts finds those).
   */
  async takeStranded(idleMs: number, limit: number): Promise<(TaskPayment & { payload: PaymentPayload; strandedIn: PaymentStatus })[]> {
    return this.db.$queryRawUnsafe<(TaskPayment & { payload: PaymentPayload; strandedIn: PaymentStatus })[]>(
      `WITH due AS (
         SELECT p.task_id, p.status AS stranded_in, s.payload FROM merchant.a2a_payments p
           JOIN LATERAL (SELECT s.payload, s.created_at FROM merchant.a2a_payment_submissions s
                          WHERE s.task_id = p.task_id ORDER BY s.id DESC LIMIT 1) s
             ON p.status = 'verified' OR s.created_at = p.updated_at
          WHERE p.status IN ('submitted', 'verified') AND p.updated_at < now() - ($1::int * interval '1 millisecond')
          ORDER BY p.updated_at LIMIT $2
          FOR UPDATE OF p SKIP LOCKED)
       UPDATE merchant.a2a_payments p SET status = 'settling', updated_at = now() FROM due
        WHERE p.task_id = due.task_id
       RETURNING ${columns('p.')}, due.payload, due.stranded_in AS "strandedIn"`,
      idleMs,
      limit,
    );
  }

  /**
   * Up to `limit` payments left `submitted` for `idleMs` with no authorization recorded for that attempt (a malformed
   * or replayed payload whose turn stopped before answering): their attempt is to be failed as the turn would have.
   */
  async strandedAttempts(idleMs: number, limit: number): Promise<TaskPayment[]> {
    return this.db.$queryRawUnsafe<TaskPayment[]>(
      `SELECT ${columns('p.')} FROM merchant.a2a_payments p
        WHERE p.status = 'submitted' AND p.updated_at < now() - ($1::int * interval '1 millisecond')
          AND NOT EXISTS (SELECT 1 FROM merchant.a2a_payment_submissions s WHERE s.task_id = p.task_id AND s.created_at = p.updated_at)
        ORDER BY p.updated_at LIMIT $2`,
      idleMs,
      limit,
    );
  }

  /**
   * Up to `limit` settling payments nobody looked at for `idleMs`, each with the authorization it was paid with. Taking
   * them moves their updated_at on, so another replica's sweep skips them for as long.
   */
  async takeSettling(idleMs: number, limit: number): Promise<(TaskPayment & { payload: PaymentPayload })[]> {
    return this.db.$queryRawUnsafe<(TaskPayment & { payload: PaymentPayload })[]>(
      `WITH due AS (
         SELECT task_id FROM merchant.a2a_payments
          WHERE status = 'settling' AND updated_at < now() - ($1::int * interval '1 millisecond')
          ORDER BY updated_at LIMIT $2
          FOR UPDATE SKIP LOCKED)
       UPDATE merchant.a2a_payments p SET updated_at = now() FROM due
        WHERE p.task_id = due.task_id
       RETURNING ${columns('p.')},
         (SELECT s.payload FROM merchant.a2a_payment_submissions s WHERE s.task_id = p.task_id ORDER BY s.id DESC LIMIT 1) AS payload`,
      idleMs,
      limit,
    );
  }
}
