import { Injectable } from '@nestjs/common';
import { fromDbDecimal, isUniqueViolation, Prisma, PrismaService, toDbDecimal, withTransaction } from '@mp/db';
import type { SignedTransaction } from '@mp/chain';
import type { Hex } from 'viem';
import { PAYMENT_RECORD, type PaymentRecord, type PaymentState } from './payment-record';
import {
  applyTransition,
  applyTransitionMany,
  eventTraceContext,
  insertedBy,
  preparedOn,
  type TransitionArgs,
  type TransitionName,
} from './payment-transitions';

export type { PaymentRecord, PaymentState } from './payment-record';

/** What a worker needs to send and judge a settlement, from the record alone. */
export interface SettlementRecord extends PaymentRecord {
  network: string;
  asset: string;
  payer: string;
  authorizationNonce: Hex;
  payTo: string;
  amount: bigint;
  validBefore: bigint;
  settleTo: Hex;
  settleData: Hex;
  /**
   * The claim's raw gas estimate (no margin: see settlementGasLimit); set only until the first send, so only a first
   * send can skip estimating again.
   */
  settleGas: bigint | null;
  /** How many transactions were signed for it: above zero, the chain may already hold its outcome. */
  attempts: number;
  /** How it settles: `exact`/`evm` (an EIP-3009 authorization) or `upto` (a Permit2 permit through the x402 upto proxy). */
  scheme: string;
}

export interface NewPayment {
  network: string;
  asset: string;
  payer: string;
  nonce: string;
  payTo: string;
  amount: bigint;
  validAfter: bigint;
  validBefore: bigint;
  scheme: string;
  payloadHash: string;
  paymentIdentifier?: string;
  settleTo: string;
  settleData: string;
  settleGas: bigint;
  merchantId?: string | null;
  origin: PaymentOrigin;
  /** evm unless said; a stripe subscription's renewal is recorded here too, with no call to send (settle* stored NULL) */
  rail?: 'evm' | 'stripe';
  /** a subscription's charge: which subscription, period and try it pays (its events carry `payment.subscription`) */
  subscription?: { id: string; periodIndex: number; attempt: number };
  /** outbox events written on this payment before its payment.verified, in the same statement (subscription.activated) */
  leadingEvents?: { type: string; data: Record<string, unknown> }[];
}

/** Which protocol's API accepted a payment: an x402 payload, or an MPP credential answering a challenge. */
export type PaymentOrigin = { protocol: 'x402'; x402Version: 1 | 2 } | { protocol: 'mpp'; challengeId: string };

/** The columns of a {@link SettlementRecord}. */
const SETTLEMENT_RECORD = {
  ...PAYMENT_RECORD,
  network: true,
  asset: true,
  payer: true,
  authorizationNonce: true,
  payTo: true,
  amount: true,
  validBefore: true,
  settleTo: true,
  settleData: true,
  settleGas: true,
  attempts: true,
  scheme: true,
} satisfies Prisma.PaymentSelect;

function settlementRecordOf(row: Prisma.PaymentGetPayload<{ select: typeof SETTLEMENT_RECORD }>): SettlementRecord {
  return {
    ...row,
    authorizationNonce: row.authorizationNonce as Hex,
    settleTo: row.settleTo as Hex,
    settleData: row.settleData as Hex,
    amount: fromDbDecimal(row.amount),
    validBefore: fromDbDecimal(row.validBefore),
    settleGas: row.settleGas === null ? null : fromDbDecimal(row.settleGas),
  };
}

export class IdempotencyConflictError extends Error {
  constructor(readonly key: string) {
    super(`payment identifier ${key} was already used for a different payment`);
  }
}

/**
 * The facilitator's durable records of payments settled on a chain (rail `evm`): their claim, their reads, and every
 * state change. A state change is a compare-and-set on the current state, written together with its event row in one
 * statement, so concurrent workers can never both advance a payment; the changes are declared in
 * payment-transitions.ts. The transactions signed for a payment are read through PaymentTransactions.
 *
 * Raw SQL stays on the /settle hot path only (the claim and the transitions: `npm run bench`, /settle, see
 * bench/README.md): each is one statement that writes the payment and its outbox event together, where Prisma Client
 * needs an interactive transaction of three or more round trips. Everything else is Prisma Client.
 */
@Injectable()
export class ChainPayments {
  constructor(private readonly db: PrismaService) {}

  async findByKey(key: { network: string; asset: string; payer: string; nonce: string }): Promise<PaymentRecord | undefined> {
    const row = await this.db.payment.findUnique({
      where: { network_asset_payer_authorizationNonce: { network: key.network, asset: key.asset, payer: key.payer, authorizationNonce: key.nonce } },
      select: PAYMENT_RECORD,
    });
    return row ?? undefined;
  }

  async findById(id: string): Promise<PaymentRecord | undefined> {
    return (await this.db.payment.findUnique({ where: { id }, select: PAYMENT_RECORD })) ?? undefined;
  }

  async findForSettlement(id: string): Promise<SettlementRecord | undefined> {
    const row = await this.db.payment.findUnique({ where: { id }, select: SETTLEMENT_RECORD });
    return row ? settlementRecordOf(row) : undefined;
  }

  /** findForSettlement of many payments in one query (a batch job's); the ones not found are left out. */
  async findManyForSettlement(ids: readonly string[]): Promise<SettlementRecord[]> {
    const rows = await this.db.payment.findMany({ where: { id: { in: [...ids] } }, select: SETTLEMENT_RECORD });
    return rows.map(settlementRecordOf);
  }

  /** Chain payments in a state for longer than `olderThanMs`: the work a crashed or busy worker left behind. */
  stale(states: PaymentState[], olderThanMs: number, limit = 500): Promise<{ id: string; state: PaymentState }[]> {
    return this.db.payment.findMany({
      where: { rail: 'evm', state: { in: states }, updatedAt: { lt: new Date(Date.now() - olderThanMs) } },
      orderBy: { updatedAt: 'asc' },
      take: limit,
      select: { id: true, state: true },
    });
  }

  /** How many payments are accepted but not yet settled or failed. */
  countInFlight(): Promise<number> {
    return this.db.payment.count({ where: { state: { in: ['verified', 'submitted'] } } });
  }

  /** The payment identifier's payload, if the identifier was used before. */
  async identifierFingerprint(key: string, merchantId: string | null): Promise<string | undefined> {
    const row = await this.db.paymentIdempotencyKey.findUnique({ where: { scope_key: { scope: merchantId ?? '', key } }, select: { payloadHash: true } });
    return row?.payloadHash;
  }

  /**
   * Claims a verified payment for settlement: inserts it unless its authorization is already known, and binds
   * its payment identifier, all in one transaction. Returns the new id, or undefined when another request holds it.
   */
  /**
   * The claim inside the caller's transaction, for a payment written together with other rows (a subscription and its
   * period 0 charge). Undefined when the authorization is already known.
   */
  claimWithin(tx: Pick<PrismaService, '$queryRaw'>, p: NewPayment): Promise<string | undefined> {
    return this.insertPayment(tx, p);
  }

  /**
   * claimWithin for many payments in ONE statement (renewals charged together): each payment and its payment.verified
   * event, unless its authorization is known. Ids in the payments' order; undefined where the authorization was known.
   * Payments with leading events go one by one (claimWithin): only an activation has them.
   */
  async claimManyWithin(tx: Pick<PrismaService, '$queryRaw'>, payments: readonly NewPayment[]): Promise<(string | undefined)[]> {
    const ids: (string | undefined)[] = [];
    const plain = payments.flatMap((p, ord) => (p.leadingEvents?.length ? [] : [{ ord, p }]));
    if (plain.length > 0) {
      const input = plain.map(({ ord, p }) => ({ ord, ...paymentColumns(p), event: verifiedEvent(p) }));
      const rows = await tx.$queryRaw<{ ord: number; id: string }[]>`
        WITH input AS (SELECT * FROM jsonb_to_recordset(${JSON.stringify(input)}::jsonb) AS r(ord int, ${PAYMENT_INPUT_RECORD}, event jsonb)
        ), inserted AS (
          INSERT INTO facilitator.payments (${PAYMENT_INSERT_COLUMNS})
          SELECT network, asset, payer, nonce, pay_to, amount, valid_after, valid_before, scheme, x402_version, payload_hash, settle_to,
                 settle_data, merchant_id, settle_gas, protocol, rail, challenge_id, subscription_id, subscription_period, subscription_attempt,
                 'verified', now()
            FROM input ORDER BY ord
          ON CONFLICT (network, asset, payer, authorization_nonce) DO NOTHING
          RETURNING id, network, asset, payer, authorization_nonce
        ), claimed AS (
          SELECT input.ord, input.event, inserted.id FROM inserted
            JOIN input ON (input.network, input.asset, input.payer, input.nonce) = (inserted.network, inserted.asset, inserted.payer, inserted.authorization_nonce)
        ), events AS (
          INSERT INTO facilitator.payment_events (payment_id, type, data, trace_context)
          SELECT id, 'payment.verified', event, ${eventTraceContext()}::jsonb FROM claimed ORDER BY ord
        )
        SELECT ord, id::text AS id FROM claimed`;
      for (const row of rows) ids[row.ord] = row.id;
    }
    for (const [ord, p] of payments.entries()) if (p.leadingEvents?.length) ids[ord] = await this.claimWithin(tx, p);
    return payments.map((_, ord) => ids[ord]);
  }

  async claim(p: NewPayment): Promise<string | undefined> {
    // Without an identifier the claim is one statement; with one, the binding joins it in a transaction.
    if (!p.paymentIdentifier) return this.insertPayment(undefined, p);
    const key = p.paymentIdentifier;
    try {
      return await withTransaction(this.db, async (tx) => {
        const id = await this.insertPayment(tx, p);
        if (id) await tx.paymentIdempotencyKey.create({ data: { scope: p.merchantId ?? '', key, payloadHash: p.payloadHash, paymentId: id } });
        return id;
      });
    } catch (error) {
      if (isUniqueViolation(error)) throw new IdempotencyConflictError(key);
      throw error;
    }
  }

  /**
   * The claim of a payment whose settlement transaction is signed already (LocalSettlement.claimAndSend): what the
   * claim and recordSubmitted write, in one statement instead of two: the payment inserted as submitted, its
   * transaction stored, and its payment.verified and payment.submitted events. False when the authorization is known.
   */
  async claimSubmitted(p: NewPayment & { id: string }, tx: SignedTransaction, network: string): Promise<boolean> {
    const submitted = insertedBy('submit', { tx, network });
    const row = { id: Prisma.sql`${p.id}::uuid`, ...paymentRow(p, submitted.state), ...submitted.columns };
    const events = [
      { ord: 0, type: 'payment.verified', data: verifiedEvent(p) },
      { ord: 1, ...submitted.event },
    ];
    const rows = await this.statement<{ id: string }>(Prisma.sql`
      WITH inserted AS (
        INSERT INTO facilitator.payments (${Prisma.raw(Object.keys(row).join(', '))}) VALUES (${Prisma.join(Object.values(row))})
        ON CONFLICT (network, asset, payer, authorization_nonce) DO NOTHING
        RETURNING id
      ), ${storedFromInserted(submitted.transaction!)}
      INSERT INTO facilitator.payment_events (payment_id, type, data, trace_context)
      SELECT stored.payment_id, e.type, e.data, ${eventTraceContext()}::jsonb
        FROM stored CROSS JOIN jsonb_to_recordset(${JSON.stringify(events)}::jsonb) AS e(ord int, type text, data jsonb)
       ORDER BY e.ord
      RETURNING payment_id AS id`);
    return rows.length > 0;
  }

  /**
   * claimSubmitted for the payments of one batch transaction (SettlementWorker.sendBatch), in one statement: each
   * inserted as submitted with the transaction, its payment.verified and payment.submitted events. All or none: false,
   * with nothing written, when any of their authorizations is known already (the insert's unique violation).
   */
  async claimSubmittedMany(payments: readonly (NewPayment & { id: string })[], tx: SignedTransaction, network: string): Promise<boolean> {
    const submitted = insertedBy('submit', { tx, network });
    const input = payments.map((p, ord) => ({ ord, id: p.id, ...paymentColumns(p), event: verifiedEvent(p) }));
    // The transition's columns (the transaction's, attempts, settle_gas) over the claim's own, as claimSubmitted.
    const fromInput = PAYMENT_COLUMN_NAMES.filter((c) => !(c in submitted.columns));
    const columns = ['id', ...fromInput, 'state', 'updated_at', ...Object.keys(submitted.columns)];
    const values = [
      Prisma.raw(['id', ...fromInput.map((c) => (c === 'authorization_nonce' ? 'nonce' : c))].join(', ')),
      Prisma.raw(`'${submitted.state}'`),
      Prisma.sql`now()`,
      ...Object.values(submitted.columns),
    ];
    try {
      const rows = await this.statement<{ id: string }>(Prisma.sql`
        WITH input AS (
          SELECT * FROM jsonb_to_recordset(${JSON.stringify(input)}::jsonb) AS r(ord int, id uuid, ${PAYMENT_INPUT_RECORD}, event jsonb)
        ), inserted AS (
          INSERT INTO facilitator.payments (${Prisma.raw(columns.join(', '))})
          SELECT ${Prisma.join(values)} FROM input ORDER BY ord
          RETURNING id
        ), ${storedFromInserted(submitted.transaction!)}
        INSERT INTO facilitator.payment_events (payment_id, type, data, trace_context)
        SELECT input.id, e.type, e.data, ${eventTraceContext()}::jsonb
          FROM input JOIN stored ON stored.payment_id = input.id
         CROSS JOIN LATERAL (VALUES (0, 'payment.verified', input.event), (1, ${submitted.event.type}::text, ${JSON.stringify(submitted.event.data)}::jsonb)) AS e(k, type, data)
         ORDER BY input.ord, e.k
        RETURNING payment_id AS id`);
      return rows.length === 2 * payments.length;
    } catch (error) {
      if (isUniqueViolation(error)) return false;
      throw error;
    }
  }

  /** The payment and its payment.verified event in one statement, unless the authorization is known (hot path: see the class). */
  private async insertPayment(tx: Pick<PrismaService, '$queryRaw'> | undefined, p: NewPayment): Promise<string | undefined> {
    const run = <T>(q: Prisma.Sql): Promise<T[]> => (tx ? tx.$queryRaw<T[]>(q) : this.statement<T>(q));
    const inserted = Prisma.sql`
        INSERT INTO facilitator.payments (${PAYMENT_INSERT_COLUMNS})
        VALUES (${Prisma.join(Object.values(paymentRow(p, 'verified')))})
        ON CONFLICT (network, asset, payer, authorization_nonce) DO NOTHING
        RETURNING id`;
    if (!p.leadingEvents?.length) {
      const rows = await run<{ id: string }>(Prisma.sql`
        WITH inserted AS (${inserted})
        INSERT INTO facilitator.payment_events (payment_id, type, data, trace_context)
        SELECT id, 'payment.verified', ${JSON.stringify(verifiedEvent(p))}::jsonb, ${eventTraceContext()}::jsonb FROM inserted
        RETURNING payment_id AS id`);
      return rows[0]?.id;
    }
    // Event ids are taken in the ORDER BY's order: the leading events come before the payment's own payment.verified.
    const events = [...p.leadingEvents, { type: 'payment.verified', data: verifiedEvent(p) }].map((e, ord) => ({ ord, type: e.type, data: e.data }));
    const rows = await run<{ id: string }>(Prisma.sql`
      WITH inserted AS (${inserted})
      INSERT INTO facilitator.payment_events (payment_id, type, data, trace_context)
      SELECT inserted.id, e.type, e.data, ${eventTraceContext()}::jsonb
        FROM inserted CROSS JOIN jsonb_to_recordset(${JSON.stringify(events)}::jsonb) AS e(ord int, type text, data jsonb)
       ORDER BY e.ord
      RETURNING payment_id AS id`);
    return rows[0]?.id;
  }

  /** Takes over a payment whose earlier attempt failed before anything reached the chain. */
  reclaim(id: string, updatedAt: Date, payloadHash: string, call: { to: string; data: string }): Promise<boolean> {
    return this.transition('retry', id, { updatedAt, payloadHash, call });
  }

  /** Records a signed settlement transaction before it is broadcast, and moves the payment to submitted. */
  recordSubmitted(id: string, tx: SignedTransaction, network: string): Promise<boolean> {
    return this.transition('submit', id, { tx, network });
  }

  /**
   * Records a signed batch transaction for every payment in it before it is broadcast: all of them move to
   * submitted, or (if any was taken meanwhile) none does. One statement, whatever the batch's size.
   */
  async recordSubmittedBatch(ids: readonly string[], tx: SignedTransaction, network: string): Promise<boolean> {
    const moved = await applyTransitionMany(
      this.db,
      'submit',
      ids.map((id) => ({ id, args: { tx, network } })),
      { allOrNone: true },
    );
    return moved.size === ids.length;
  }

  /**
   * Records a fee-bumped replacement (same signer and nonce) before it is broadcast, for every payment the stuck
   * transaction settles (a batch settles several), so whichever of the two is mined, each payment knows it.
   */
  async recordReplacement(stuckHash: string, tx: SignedTransaction, network: string): Promise<boolean> {
    const ids = await this.db.payment.findMany({ where: { txHash: stuckHash, state: 'submitted' }, select: { id: true } });
    if (ids.length === 0) return false;
    return withTransaction(this.db, async (db) => {
      for (const { id } of ids) await this.transition('replace', id, { tx, network, stuckHash }, db);
      return true;
    });
  }

  /** The transaction never took (its nonce went elsewhere, or the node refused it as stale): back to verified, to be sent again. */
  releaseUnsent(id: string, reason: string): Promise<boolean> {
    return this.transition('resend', id, { reason });
  }

  /**
   * Its transfer failed inside a batch that was mined: the batch transaction did not settle this payment, so it is
   * detached from it, and the payment goes back to verified to be sent alone.
   */
  releaseFromBatch(id: string, batchHash: string): Promise<boolean> {
    return this.transition('leaveBatch', id, { batchHash });
  }

  /** `gasFee`: the payment's share of the transaction's fee in wei (see gasShare), which the ledger books as gas. */
  markConfirmed(
    id: string,
    hash: string,
    receipt: { blockNumber: bigint; blockHash: string; gasUsed: bigint; effectiveGasPrice?: bigint },
    gasFee: bigint,
  ): Promise<boolean> {
    // From verified too: a payment released to be sent again (its nonce looked taken) that an earlier transaction carried.
    return this.transition('confirm', id, { hash, receipt, gasFee });
  }

  /**
   * markConfirmed of the payments one transaction carried, in one statement, each with its own gas share and event:
   * the ids of those this call confirmed (each a compare-and-set, as markConfirmed).
   */
  markConfirmedMany(
    hash: string,
    receipt: { blockNumber: bigint; blockHash: string; gasUsed: bigint; effectiveGasPrice?: bigint },
    gasFees: ReadonlyMap<string, bigint>,
  ): Promise<Set<string>> {
    return applyTransitionMany(
      this.db,
      'confirm',
      [...gasFees].map(([id, gasFee]) => ({ id, args: { hash, receipt, gasFee } })),
    );
  }

  /** Chain payments confirmed in a block above `afterBlock` on the network: the ones a reorg could still take back. */
  async confirmedAfter(network: string, afterBlock: bigint): Promise<{ id: string; blockNumber: bigint; blockHash: string }[]> {
    const rows = await this.db.payment.findMany({
      where: { state: 'confirmed', rail: 'evm', network, blockNumber: { gt: toDbDecimal(afterBlock) }, blockHash: { not: null } },
      select: { id: true, blockNumber: true, blockHash: true },
    });
    return rows.map((r) => ({ id: r.id, blockNumber: fromDbDecimal(r.blockNumber as Prisma.Decimal), blockHash: r.blockHash as string }));
  }

  /**
   * The block that confirmed it is no longer in the chain: back to submitted, to be judged again (its transaction may
   * be mined anew, or not at all), with a payment.reorged event that corrects the merchant's view.
   */
  markReorged(id: string, blockHash: string, blockNumber: bigint): Promise<boolean> {
    return this.transition('reorg', id, { blockHash, blockNumber });
  }

  /** A failure on chain (the transaction was mined, and its gas paid): final. The hash stays as evidence. */
  markFailedOnChain(id: string, hash: string, reason: string, message: string, gasFee: bigint): Promise<boolean> {
    return this.transition('failOnChain', id, { hash, reason, message, gasFee });
  }

  /**
   * A failure before anything reached the chain: a later request may retry the payment. `decidedOn`: the state and
   * attempts the failure was decided on; it is recorded only if the payment still has them (no worker signed a
   * transaction for it meanwhile, which may carry it).
   */
  markFailedUnsent(id: string, reason: string, message: string, decidedOn?: Pick<SettlementRecord, 'state' | 'attempts'>): Promise<boolean> {
    return this.transition('failUnsent', id, { reason, message, attempts: decidedOn?.attempts }, undefined, decidedOn && [decidedOn.state]);
  }

  /** The authorization's validBefore passed with nothing mined: it can never settle now. */
  markExpired(id: string, from: PaymentState[], message: string): Promise<boolean> {
    return this.transition('expire', id, { message }, undefined, from);
  }

  /** A statement outside any transaction, prepared (preparedOn): the claims and transitions are on the paid request's path. */
  private statement<T>(q: Prisma.Sql): Promise<T[]> {
    return preparedOn(this.db).$queryRawUnsafe<T[]>(q.text, ...q.values);
  }

  /**
   * `tx`: within that transaction; without, a prepared statement (PrismaService.prepared, named by its text): the
   * settlement's transitions are on the paid request's path.
   */
  private async transition<N extends TransitionName>(
    name: N,
    id: string,
    args: TransitionArgs<N>,
    tx?: Pick<PrismaService, '$queryRawUnsafe'>,
    from?: PaymentState[],
  ): Promise<boolean> {
    return (await applyTransition(tx ?? preparedOn(this.db), name, id, args, from)).moved;
  }
}

/** The CTE `stored`: the signed transaction's row for every payment the CTE `inserted` returned (insertedBy's `transaction`). */
function storedFromInserted(transaction: Record<string, Prisma.Sql>): Prisma.Sql {
  return Prisma.sql`stored AS (
        INSERT INTO facilitator.payment_transactions (payment_id, ${Prisma.raw(Object.keys(transaction).join(', '))})
        SELECT id, ${Prisma.join(Object.values(transaction))} FROM inserted
        RETURNING payment_id
      )`;
}

/** The columns of paymentColumns as stored (authorization_nonce is `nonce` there), in their order. */
const PAYMENT_COLUMN_NAMES = (
  'network asset payer authorization_nonce pay_to amount valid_after valid_before scheme x402_version payload_hash settle_to ' +
  'settle_data merchant_id settle_gas protocol rail challenge_id subscription_id subscription_period subscription_attempt'
).split(' ');

/** The columns a claim inserts, in the order of paymentColumns followed by state and updated_at. */
const PAYMENT_INSERT_COLUMNS = Prisma.raw([...PAYMENT_COLUMN_NAMES, 'state', 'updated_at'].join(', '));

/** paymentColumns' record type, for statements that read many payments from one JSON parameter (jsonb_to_recordset). */
const PAYMENT_INPUT_RECORD = Prisma.raw(
  'network text, asset text, payer text, nonce text, pay_to text, amount numeric, valid_after numeric, valid_before numeric, scheme text, ' +
    'x402_version int, payload_hash text, settle_to text, settle_data text, merchant_id uuid, settle_gas numeric, protocol text, ' +
    'rail text, challenge_id text, subscription_id text, subscription_period int, subscription_attempt int',
);

/** A new payment's columns as stored (SQL names), for the single and the many-row claim alike. */
function paymentColumns(p: NewPayment) {
  const onChain = (p.rail ?? 'evm') === 'evm';
  return {
    network: p.network,
    asset: p.asset,
    payer: p.payer,
    nonce: p.nonce,
    pay_to: p.payTo,
    amount: p.amount.toString(),
    valid_after: p.validAfter.toString(),
    valid_before: p.validBefore.toString(),
    scheme: p.scheme,
    x402_version: p.origin.protocol === 'x402' ? p.origin.x402Version : null,
    payload_hash: p.payloadHash,
    settle_to: onChain ? p.settleTo.toLowerCase() : null,
    settle_data: onChain ? p.settleData : null,
    merchant_id: p.merchantId ?? null,
    settle_gas: onChain ? p.settleGas.toString() : null,
    protocol: p.origin.protocol,
    rail: p.rail ?? 'evm',
    challenge_id: p.origin.protocol === 'mpp' ? p.origin.challengeId : null,
    subscription_id: p.subscription?.id ?? null,
    subscription_period: p.subscription?.periodIndex ?? null,
    subscription_attempt: p.subscription?.attempt ?? null,
  };
}

/** One new payment's row entering `state`: PAYMENT_INSERT_COLUMNS, in their order, → SQL value. */
function paymentRow(p: NewPayment, state: PaymentState): Record<string, Prisma.Sql> {
  const c = paymentColumns(p);
  return {
    network: Prisma.sql`${c.network}`,
    asset: Prisma.sql`${c.asset}`,
    payer: Prisma.sql`${c.payer}`,
    authorization_nonce: Prisma.sql`${c.nonce}`,
    pay_to: Prisma.sql`${c.pay_to}`,
    amount: Prisma.sql`${c.amount}::numeric`,
    valid_after: Prisma.sql`${c.valid_after}::numeric`,
    valid_before: Prisma.sql`${c.valid_before}::numeric`,
    scheme: Prisma.sql`${c.scheme}`,
    x402_version: Prisma.sql`${c.x402_version}::int`,
    payload_hash: Prisma.sql`${c.payload_hash}`,
    settle_to: Prisma.sql`${c.settle_to}`,
    settle_data: Prisma.sql`${c.settle_data}`,
    merchant_id: Prisma.sql`${c.merchant_id}::uuid`,
    settle_gas: Prisma.sql`${c.settle_gas}::numeric`,
    protocol: Prisma.sql`${c.protocol}`,
    rail: Prisma.sql`${c.rail}`,
    challenge_id: Prisma.sql`${c.challenge_id}::text`,
    subscription_id: Prisma.sql`${c.subscription_id}::text`,
    subscription_period: Prisma.sql`${c.subscription_period}::int`,
    subscription_attempt: Prisma.sql`${c.subscription_attempt}::int`,
    state: Prisma.raw(`'${state}'`),
    updated_at: Prisma.sql`now()`,
  };
}

/** The payment.verified event's data. */
function verifiedEvent(p: NewPayment): Record<string, unknown> {
  return {
    network: p.network,
    asset: p.asset,
    payer: p.payer,
    payTo: p.payTo,
    amount: p.amount.toString(),
    nonce: p.nonce,
    protocol: p.origin.protocol,
    rail: p.rail ?? 'evm',
    ...(p.origin.protocol === 'mpp' && { method: p.scheme, challengeId: p.origin.challengeId }),
  };
}
