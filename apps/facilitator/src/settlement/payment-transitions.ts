import { createHash } from 'node:crypto';
import { Prisma, type PrismaService } from '@mp/db';
import type { SignedTransaction } from '@mp/chain';
import { currentTraceContext } from '@mp/platform';

/** The states of `facilitator.payment_state`. */
export type PaymentState = 'verified' | 'submitted' | 'confirmed' | 'failed' | 'expired';

/** A column set to the database's clock. */
export const NOW = Symbol('now()');
/** A column set to NULL; in a guard, a column that must be NULL. */
export const NULL = Symbol('NULL');
/** A counter one above what it was. */
export const INCREMENT = Symbol('+ 1');

/** The value given, or, when it is null, what the column already holds. */
export class KeepIfNull {
  constructor(readonly value: string | null) {}
}

type ColumnValue = string | number | bigint | Date | null | typeof NOW | typeof NULL | typeof INCREMENT | KeepIfNull;

/** The payment columns a transition may set or guard on (never `state`, `updated_at` is a guard only: both are the builder's). */
type PaymentColumn =
  | 'tx_hash'
  | 'signer'
  | 'tx_nonce'
  | 'submitted_at'
  | 'settled_at'
  | 'attempts'
  | 'settle_to'
  | 'settle_data'
  | 'settle_gas'
  | 'payload_hash'
  | 'error_reason'
  | 'error_message'
  | 'reference'
  | 'block_number'
  | 'block_hash'
  | 'rail'
  | 'updated_at';

type TransactionColumn = 'hash' | 'network' | 'signer' | 'nonce' | 'raw_tx' | 'max_fee_per_gas' | 'max_priority_fee_per_gas' | 'gas_limit';

/** Parameters PostgreSQL cannot type from the column alone (a decimal string into NUMERIC, in an INSERT … SELECT). */
const CASTS: Partial<Record<PaymentColumn | TransactionColumn, string>> = {
  block_number: 'numeric',
  max_fee_per_gas: 'numeric',
  max_priority_fee_per_gas: 'numeric',
  gas_limit: 'numeric',
};

export interface TransitionSpec<Args> {
  from: readonly PaymentState[];
  to: PaymentState;
  event: string;
  /** what the transition writes on the payment, besides its state and updated_at */
  set: (args: Args) => Partial<Record<PaymentColumn, ColumnValue>>;
  /** conditions besides the from-states (a value: equal to it; NULL: IS NULL) */
  where?: (args: Args) => Partial<Record<PaymentColumn, ColumnValue>>;
  /** the event's data */
  data: (args: Args) => Record<string, unknown>;
  /** a signed transaction stored in payment_transactions with the change: no event unless it is stored */
  storesTransaction?: (args: Args) => Record<TransactionColumn, ColumnValue>;
  /** the payment_transactions row (by hash) the transaction detaches from the payment, if it is there */
  detachesTransaction?: (args: Args) => string;
  /**
   * Added to the event's data when the payment left this state (a correction says what it corrects). Declaring it
   * makes the statement lock the row first and answer the state it left as `was`.
   */
  dataWhenLeaving?: Partial<Record<PaymentState, Record<string, unknown>>>;
}

const transition = <Args>(spec: TransitionSpec<Args>): TransitionSpec<Args> => spec;

const storedTransaction = (tx: SignedTransaction, network: string): Record<TransactionColumn, ColumnValue> => ({
  hash: tx.hash,
  network,
  signer: tx.signer.toLowerCase(),
  nonce: tx.nonce,
  raw_tx: tx.raw,
  max_fee_per_gas: tx.maxFeePerGas,
  max_priority_fee_per_gas: tx.maxPriorityFeePerGas,
  gas_limit: tx.gas,
});

const unsent = { tx_hash: NULL, signer: NULL, tx_nonce: NULL } as const;

/**
 * Every change of a payment's state, declared once: which states it leaves, the state it enters, its event, and the
 * columns it writes. `transitionStatement` turns an entry into its one compare-and-set statement.
 */
export const PAYMENT_TRANSITIONS = {
  /** Settlement: a signed transaction, stored before it is broadcast. */
  submit: transition<{ tx: SignedTransaction; network: string }>({
    from: ['verified'],
    to: 'submitted',
    event: 'payment.submitted',
    set: ({ tx }) => ({ tx_hash: tx.hash, signer: tx.signer.toLowerCase(), tx_nonce: tx.nonce, submitted_at: NOW, attempts: INCREMENT, settle_gas: NULL }),
    data: ({ tx }) => ({ txHash: tx.hash, signer: tx.signer, txNonce: tx.nonce }),
    storesTransaction: ({ tx, network }) => storedTransaction(tx, network),
  }),
  /** A fee-bumped replacement (same signer and nonce) of a stuck transaction. */
  replace: transition<{ tx: SignedTransaction; network: string; stuckHash: string }>({
    from: ['submitted'],
    to: 'submitted',
    event: 'payment.replaced',
    set: ({ tx }) => ({ tx_hash: tx.hash }),
    data: ({ tx, stuckHash }) => ({
      txHash: tx.hash,
      replaces: stuckHash,
      maxFeePerGas: tx.maxFeePerGas.toString(),
      maxPriorityFeePerGas: tx.maxPriorityFeePerGas.toString(),
    }),
    storesTransaction: ({ tx, network }) => storedTransaction(tx, network),
  }),
  /** The transaction never took: back to verified, to be sent again. */
  resend: transition<{ reason: string }>({
    from: ['submitted'],
    to: 'verified',
    event: 'payment.resend',
    set: () => unsent,
    data: ({ reason }) => ({ reason }),
  }),
  /** Its transfer failed inside a mined batch: detached from the batch, back to verified to be sent alone. */
  leaveBatch: transition<{ batchHash: string }>({
    from: ['submitted'],
    to: 'verified',
    event: 'payment.resend',
    set: () => unsent,
    data: ({ batchHash }) => ({ reason: `its transfer failed inside batch ${batchHash}` }),
    detachesTransaction: ({ batchHash }) => batchHash,
  }),
  /** Mined with the exact transfer. From verified too: a payment released to be sent again that an earlier transaction carried. */
  confirm: transition<{ hash: string; receipt: { blockNumber: bigint; blockHash: string; gasUsed: bigint; effectiveGasPrice?: bigint }; gasFee: bigint }>({
    from: ['submitted', 'verified'],
    to: 'confirmed',
    event: 'payment.confirmed',
    set: ({ hash, receipt }) => ({ settled_at: NOW, tx_hash: hash, block_number: receipt.blockNumber, block_hash: receipt.blockHash }),
    data: ({ hash, receipt, gasFee }) => ({
      txHash: hash,
      blockNumber: receipt.blockNumber.toString(),
      blockHash: receipt.blockHash,
      gasUsed: receipt.gasUsed.toString(),
      effectiveGasPrice: receipt.effectiveGasPrice?.toString(),
      gasFee: gasFee.toString(),
    }),
  }),
  /** The block that confirmed it left the chain: back to submitted, to be judged again. */
  reorg: transition<{ blockHash: string; blockNumber: bigint }>({
    from: ['confirmed'],
    to: 'submitted',
    event: 'payment.reorged',
    set: () => ({ settled_at: NULL, block_number: NULL, block_hash: NULL }),
    where: ({ blockHash }) => ({ block_hash: blockHash }),
    data: ({ blockHash, blockNumber }) => ({ blockHash, blockNumber: blockNumber.toString() }),
  }),
  /** Mined and failed (its gas paid): final. */
  failOnChain: transition<{ hash: string; reason: string; message: string; gasFee: bigint }>({
    from: ['submitted'],
    to: 'failed',
    event: 'payment.failed',
    set: ({ hash, reason, message }) => ({ tx_hash: hash, error_reason: reason, error_message: message }),
    data: ({ hash, reason, message, gasFee }) => ({ txHash: hash, reason, message, gasFee: gasFee.toString() }),
  }),
  /**
   * Refused before anything reached the chain: a later request may retry it. `attempts`: only if no transaction was
   * signed for it since the record the refusal was decided on (another worker's may carry it).
   */
  failUnsent: transition<{ reason: string; message: string; attempts?: number }>({
    from: ['verified', 'submitted'],
    to: 'failed',
    event: 'payment.failed',
    set: ({ reason, message }) => ({ error_reason: reason, error_message: message, ...unsent }),
    where: ({ attempts }) => (attempts === undefined ? {} : { attempts }),
    data: ({ reason, message }) => ({ reason, message, broadcast: false }),
  }),
  /** A failed payment taken over by a new request (nothing reached the chain). */
  retry: transition<{ updatedAt: Date; payloadHash: string; call: { to: string; data: string } }>({
    from: ['failed'],
    to: 'verified',
    event: 'payment.retried',
    set: ({ payloadHash, call }) => ({
      payload_hash: payloadHash,
      settle_to: call.to.toLowerCase(),
      settle_data: call.data,
      settle_gas: NULL,
      error_reason: NULL,
      error_message: NULL,
      tx_hash: NULL,
    }),
    where: ({ updatedAt }) => ({ tx_hash: NULL, updated_at: updatedAt }),
    data: ({ payloadHash }) => ({ payloadHash }),
  }),
  /** validBefore passed with nothing mined: it can never settle now. */
  expire: transition<{ message: string }>({
    from: ['verified'],
    to: 'expired',
    event: 'payment.expired',
    set: ({ message }) => ({ error_reason: 'invalid_exact_evm_payload_authorization_valid_before', error_message: message }),
    data: ({ message }) => ({ message }),
  }),
  /** An off-chain rail (Stripe) refused it: final. */
  failExternally: transition<{ reason: string; message: string; reference?: string }>({
    from: ['verified'],
    to: 'failed',
    event: 'payment.failed',
    set: ({ reason, message, reference }) => ({ error_reason: reason, error_message: message, reference: new KeepIfNull(reference ?? null) }),
    data: ({ reason, message, reference }) => ({ reason, message, ...(reference && { reference }) }),
  }),
  /** The PaymentIntent succeeded: confirmed, or, correcting an earlier answer, confirmed after all. */
  confirmExternally: transition<{ reference: string; details: Record<string, unknown> }>({
    from: ['verified', 'failed'],
    to: 'confirmed',
    event: 'payment.confirmed',
    set: ({ reference }) => ({ settled_at: NOW, reference, error_reason: NULL, error_message: NULL }),
    where: () => ({ rail: 'stripe' }),
    data: ({ reference, details }) => ({ reference, ...details }),
    dataWhenLeaving: { failed: { corrects: 'payment.failed' } },
  }),
};

export type TransitionName = keyof typeof PAYMENT_TRANSITIONS;
export type TransitionArgs<N extends TransitionName> = (typeof PAYMENT_TRANSITIONS)[N] extends TransitionSpec<infer Args> ? Args : never;

export interface TransitionStatement {
  sql: string;
  params: unknown[];
}

const quoted = (states: readonly PaymentState[]) => states.map((s) => `'${s}'`).join(', ');

/**
 * A transition's writes for a payment inserted straight into its target state (ChainPayments.claimSubmitted), so they
 * stay the transition's: the state, the event, the payment columns as a new row has them (the clock, NULL, a counter
 * from 0 to 1) and the transaction it stores, each as column → SQL value.
 */
export function insertedBy<N extends TransitionName>(name: N, args: TransitionArgs<N>) {
  const spec = PAYMENT_TRANSITIONS[name] as TransitionSpec<TransitionArgs<N>>;
  const value = (column: PaymentColumn | TransactionColumn, v: ColumnValue): Prisma.Sql => {
    if (v === NOW) return Prisma.sql`now()`;
    if (v === NULL) return Prisma.sql`NULL`;
    if (v === INCREMENT) return Prisma.sql`1`;
    const plain = v instanceof KeepIfNull ? v.value : typeof v === 'bigint' ? v.toString() : v;
    const cast = CASTS[column];
    return cast ? Prisma.sql`${plain}::${Prisma.raw(cast)}` : Prisma.sql`${plain}`;
  };
  const sqlValues = (record: Partial<Record<PaymentColumn | TransactionColumn, ColumnValue>>): Record<string, Prisma.Sql> =>
    Object.fromEntries(Object.entries(record).map(([column, v]) => [column, value(column as PaymentColumn, v as ColumnValue)]));
  return {
    state: spec.to,
    event: { type: spec.event, data: spec.data(args) },
    columns: sqlValues(spec.set(args)),
    transaction: spec.storesTransaction ? sqlValues(spec.storesTransaction(args)) : undefined,
  };
}

/** The trace context an event is written in, as its `trace_context` (jsonb) parameter; null while tracing is off. */
export function eventTraceContext(): string | null {
  const traceContext = currentTraceContext();
  return traceContext ? JSON.stringify(traceContext) : null;
}

/** A statement's parameters as they are added, and the SQL of a transition's column writes and guards over them. */
function statementParameters(params: unknown[]) {
  const param = (value: unknown, cast?: string) => {
    params.push(typeof value === 'bigint' ? value.toString() : value);
    return `$${params.length}${cast ? `::${cast}` : ''}`;
  };
  const assignment = ([column, value]: [string, ColumnValue]) => {
    if (value === NOW) return `${column} = now()`;
    if (value === NULL) return `${column} = NULL`;
    if (value === INCREMENT) return `${column} = ${column} + 1`;
    if (value instanceof KeepIfNull) return `${column} = COALESCE(${param(value.value)}, ${column})`;
    return `${column} = ${param(value, CASTS[column as PaymentColumn])}`;
  };
  const condition = ([column, value]: [string, ColumnValue]) =>
    value === NULL ? ` AND ${column} IS NULL` : ` AND ${column} = ${param(value, CASTS[column as PaymentColumn])}`;
  /** The SET list (state and updated_at first) and the extra WHERE conditions of the transition with these arguments. */
  const changes = <Args>(spec: TransitionSpec<Args>, args: Args) => ({
    set: [`state = '${spec.to}'`, 'updated_at = now()', ...Object.entries(spec.set(args)).map(assignment)].join(', '),
    guards: Object.entries(spec.where?.(args) ?? {})
      .map(condition)
      .join(''),
  });
  /** The payment_transactions INSERT of a transition that stores one, reading the payment ids from `source`. */
  const storedFrom = <Args>(spec: TransitionSpec<Args>, args: Args, source: string) => {
    const columns = Object.entries(spec.storesTransaction!(args));
    const values = columns.map(([column, value]) => param(value, CASTS[column as TransactionColumn]));
    return `stored AS (INSERT INTO facilitator.payment_transactions (payment_id, ${columns.map(([c]) => c).join(', ')}) SELECT id, ${values.join(', ')} FROM ${source} RETURNING payment_id AS id)`;
  };
  return { param, changes, storedFrom };
}

/** The states a transition leaves: the declared ones, or `from` if it narrows them. */
function leftStates(name: TransitionName, spec: { from: readonly PaymentState[] }, from?: readonly PaymentState[]): string {
  const leaving = from ?? spec.from;
  const undeclared = leaving.filter((s) => !spec.from.includes(s));
  if (leaving.length === 0 || undeclared.length > 0) throw new Error(`transition ${name} cannot leave ${undeclared.join(', ') || 'no state'}`);
  return quoted(leaving);
}

/**
 * The one statement of a transition: the compare-and-set `UPDATE … WHERE state IN (…) RETURNING` feeding the event's
 * INSERT (and the transaction's, if it stores one). $1 is the payment id, $2 the event type, $3 its data; the columns'
 * values follow, numbered in the order they are declared, then the event's trace context if there is one (see
 * {@link eventTraceContext}). `from` narrows the declared from-states.
 */
export function transitionStatement<N extends TransitionName>(
  name: N,
  id: string,
  args: TransitionArgs<N>,
  from?: readonly PaymentState[],
  traceContext: string | null = null,
): TransitionStatement {
  const spec = PAYMENT_TRANSITIONS[name] as TransitionSpec<TransitionArgs<N>>;
  const states = leftStates(name, spec, from);
  const params: unknown[] = [id, spec.event, JSON.stringify(spec.data(args))];
  const { param, changes, storedFrom } = statementParameters(params);

  const eventColumns = traceContext === null ? 'payment_id, type, data' : 'payment_id, type, data, trace_context';
  const eventValues = (data: string) => (traceContext === null ? `id, $2, ${data}` : `id, $2, ${data}, ${param(traceContext, 'jsonb')}`);
  const { set, guards } = changes(spec, args);

  if (spec.dataWhenLeaving) {
    // The state it left is only known to a statement that locks the row before changing it.
    const extra = Object.entries(spec.dataWhenLeaving)
      .map(([state, data]) => ` WHEN '${state}' THEN ${param(JSON.stringify(data))}::jsonb`)
      .join('');
    return {
      sql:
        `WITH prior AS (SELECT id, state::text AS was FROM facilitator.payments WHERE id = $1::uuid AND state IN (${states})${guards} FOR UPDATE), ` +
        `updated AS (UPDATE facilitator.payments p SET ${set} FROM prior WHERE p.id = prior.id AND p.state IN (${states}) RETURNING p.id, prior.was), ` +
        `event AS (INSERT INTO facilitator.payment_events (${eventColumns}) SELECT ${eventValues(`$3::jsonb || CASE was${extra} ELSE '{}'::jsonb END`)} FROM updated) ` +
        `SELECT id, was FROM updated`,
      params,
    };
  }

  const steps = [`updated AS (UPDATE facilitator.payments SET ${set} WHERE id = $1::uuid AND state IN (${states})${guards} RETURNING id)`];
  let eventSource = 'updated';
  if (spec.storesTransaction) {
    steps.push(storedFrom(spec, args, 'updated'));
    eventSource = 'stored';
  }
  if (spec.detachesTransaction) {
    steps.push(
      `detached AS (DELETE FROM facilitator.payment_transactions WHERE payment_id IN (SELECT id FROM updated) AND hash = ${param(spec.detachesTransaction(args))} RETURNING payment_id)`,
    );
  }
  return {
    sql: `WITH ${steps.join(', ')} INSERT INTO facilitator.payment_events (${eventColumns}) SELECT ${eventValues('$3::jsonb')} FROM ${eventSource} RETURNING payment_id AS id`,
    params,
  };
}

/** One payment of a {@link transitionManyStatement}. */
export interface TransitionItem<N extends TransitionName> {
  id: string;
  args: TransitionArgs<N>;
}

/**
 * The same transition of many payments in ONE statement (a batch transaction's payments recorded submitted, or
 * confirmed by one receipt), each still a compare-and-set with its own event: $1 is a JSON array of every payment's id
 * and event data, $2 the event type, the columns' values follow as in {@link transitionStatement}. The columns written
 * (and guarded, and the transaction stored) must be the same for every payment: only the event data may differ.
 * `allOrNone`: the payments are locked first (in id order, so two such statements never deadlock), and none moves unless
 * every one of them can. Transitions that detach a transaction or read the state they leave are one payment at a time.
 */
export function transitionManyStatement<N extends TransitionName>(
  name: N,
  items: readonly TransitionItem<N>[],
  options: { allOrNone?: boolean } = {},
  traceContext: string | null = null,
): TransitionStatement {
  const spec = PAYMENT_TRANSITIONS[name] as TransitionSpec<TransitionArgs<N>>;
  if (spec.dataWhenLeaving || spec.detachesTransaction) throw new Error(`transition ${name} is applied one payment at a time`);
  const first = items[0];
  if (!first) throw new Error(`transition ${name} of no payment`);
  if (new Set(items.map((i) => i.id)).size !== items.length) throw new Error(`transition ${name} names a payment twice`);
  const columnsOf = (args: TransitionArgs<N>) => JSON.stringify([spec.set(args), spec.where?.(args), spec.storesTransaction?.(args)], jsonColumnValue);
  const columns = columnsOf(first.args);
  if (items.some((i) => columnsOf(i.args) !== columns)) throw new Error(`transition ${name} of many payments must write the same columns on each`);

  const states = leftStates(name, spec);
  const params: unknown[] = [JSON.stringify(items.map((i) => ({ payment_id: i.id, event_data: spec.data(i.args) }))), spec.event];
  const { param, changes, storedFrom } = statementParameters(params);
  const { set, guards } = changes(spec, first.args);

  const steps = ['input AS (SELECT payment_id, event_data FROM jsonb_to_recordset($1::jsonb) AS i(payment_id uuid, event_data jsonb))'];
  let allMove = '';
  if (options.allOrNone) {
    steps.push(
      `claimed AS MATERIALIZED (SELECT id FROM facilitator.payments WHERE id IN (SELECT payment_id FROM input) AND state IN (${states})${guards} ORDER BY id FOR UPDATE)`,
    );
    allMove = ` AND (SELECT count(*) FROM claimed) = ${param(items.length, 'int')}`;
  }
  steps.push(
    `updated AS (UPDATE facilitator.payments SET ${set} FROM input WHERE id = input.payment_id AND state IN (${states})${guards}${allMove} RETURNING id, input.event_data)`,
  );
  let eventSource = 'updated';
  if (spec.storesTransaction) {
    steps.push(storedFrom(spec, first.args, 'updated'));
    eventSource = 'updated JOIN stored USING (id)';
  }
  const eventColumns = traceContext === null ? 'payment_id, type, data' : 'payment_id, type, data, trace_context';
  const eventValues = traceContext === null ? 'id, $2, event_data' : `id, $2, event_data, ${param(traceContext, 'jsonb')}`;
  return {
    sql: `WITH ${steps.join(', ')} INSERT INTO facilitator.payment_events (${eventColumns}) SELECT ${eventValues} FROM ${eventSource} RETURNING payment_id AS id`,
    params,
  };
}

/** A column value as the comparison of transitionManyStatement's items sees it. */
function jsonColumnValue(_key: string, value: unknown): unknown {
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'symbol') return value.toString();
  return value;
}

/** What runs a statement: Prisma Client or a transaction of it (its $queryRawUnsafe), or preparedOn. */
export type SqlRunner = Pick<PrismaService, '$queryRawUnsafe'>;

/**
 * Runs statements outside any transaction as prepared ones, each named by its text (a transition's text depends only
 * on the transition and its arguments' shape, so there are few).
 */
export function preparedOn(db: Pick<PrismaService, 'prepared'>): SqlRunner {
  return { $queryRawUnsafe: <T>(sql: string, ...params: unknown[]) => db.prepared(statementName(sql), sql, params) as unknown as Prisma.PrismaPromise<T> };
}

const statementNames = new Map<string, string>();
function statementName(sql: string): string {
  let name = statementNames.get(sql);
  if (!name) statementNames.set(sql, (name = `payment_${createHash('sha1').update(sql).digest('hex').slice(0, 24)}`));
  return name;
}

/**
 * Runs a transition: true if this call moved the payment (false: it was not in a from-state, or a guard failed).
 * With `dataWhenLeaving`, `was` is the state it left.
 */
export async function applyTransition<N extends TransitionName>(
  db: SqlRunner,
  name: N,
  id: string,
  args: TransitionArgs<N>,
  from?: readonly PaymentState[],
): Promise<{ moved: boolean; was?: PaymentState }> {
  const { sql, params } = transitionStatement(name, id, args, from, eventTraceContext());
  const rows = await db.$queryRawUnsafe<{ id: string; was?: PaymentState }[]>(sql, ...params);
  return { moved: rows.length === 1, was: rows[0]?.was };
}

/** Runs a {@link transitionManyStatement}: the ids of the payments this call moved. */
export async function applyTransitionMany<N extends TransitionName>(
  db: Pick<PrismaService, '$queryRawUnsafe'>,
  name: N,
  items: readonly TransitionItem<N>[],
  options: { allOrNone?: boolean } = {},
): Promise<Set<string>> {
  if (items.length === 0) return new Set();
  const { sql, params } = transitionManyStatement(name, items, options, eventTraceContext());
  const rows = await db.$queryRawUnsafe<{ id: string }[]>(sql, ...params);
  return new Set(rows.map((r) => r.id));
}
