import { Injectable } from '@nestjs/common';
import type { PaymentEventData, PaymentEventType } from '@mp/clients';
import { fromDbDecimal, isUniqueViolation, PrismaService, toDbDecimal, withTransaction, type Tx } from '@mp/db';
import { ChainPayments, type NewPayment } from '../settlement/chain-payments.repository';
import { eventTraceContext } from '../settlement/payment-transitions';

export type SubscriptionState = 'active' | 'canceled' | 'revoked';
export type ChargeRefusal = PaymentEventData<'subscription.charge_refused'>['reason'];
export type Revocation = PaymentEventData<'subscription.revoked'>['reason'];

/** What a subscription is from its activation on, and never changes: whose, which grant, what it pays how often. */
interface SubscriptionTerms {
  id: string;
  scope: string;
  merchantId: string | null;
  challengeId: string;
  method: string;
  network: string;
  asset: string;
  payer: string;
  payTo: string;
  amount: bigint;
  periodCount: number;
  anchor: Date;
  expiresAt: Date | null;
  externalId: string | null;
}

/** A subscription as the commands and the watcher need it. */
export interface SubscriptionRecord extends SubscriptionTerms {
  periodUnit: 'day' | 'week' | 'month';
  firstPaymentId: string;
  state: SubscriptionState;
  cancelAt: Date | null;
  cancelCommandId: string | null;
}

/** One period's stored authorization: the signature sealed, the rest as signed. */
export interface StoredAuthorization {
  periodIndex: number;
  nonce: string;
  validAfter: bigint;
  validBefore: bigint;
  sealed: Buffer | null;
  keyId: string | null;
}

export interface NewSubscription extends SubscriptionTerms {
  periodUnit: string;
  authorizedPeriods: number | null;
  planId: string | null;
}

export interface ChargeCommandKey {
  subscriptionId: string;
  periodIndex: number;
  attempt: number;
  commandId: string;
}

/** A (subscription, period) as the bulk reads key it. */
export function periodKey(subscriptionId: string, periodIndex: number): string {
  return `${subscriptionId}:${periodIndex}`;
}

/** What the charge rules read about many (subscription, period) pairs, keyed by periodKey. */
export interface ChargeFacts {
  authorizations: Map<string, StoredAuthorization>;
  /** the periods a payment of ours pays or is paying (verified, submitted or confirmed) */
  paidOrInFlight: Set<string>;
}

/** One charge of a batch: its command, the payment the rail built for it. */
export interface ChargeItem {
  key: ChargeCommandKey;
  payment: NewPayment;
}

export type ChargeOutcome = { kind: 'charged'; paymentId: string } | { kind: 'refused'; reason: ChargeRefusal } | { kind: 'done' };

type Refusal = { reason: ChargeRefusal; message: string };

/** The columns of a SubscriptionRecord (`toRecord`); other repositories join it into their own reads. */
export const SUBSCRIPTION_SELECT = {
  id: true,
  scope: true,
  merchantId: true,
  challengeId: true,
  method: true,
  network: true,
  asset: true,
  payer: true,
  payTo: true,
  amount: true,
  periodUnit: true,
  periodCount: true,
  anchor: true,
  expiresAt: true,
  firstPaymentId: true,
  externalId: true,
  state: true,
  cancelAt: true,
  cancelCommandId: true,
} as const;

/**
 * The facilitator's subscriptions (issue 13): the grant a verified credential gave, its sealed authorizations, each
 * charge the ledger asked for (once), and the subscription's own outbox events, written on its period 0 payment in the
 * same transaction as the change they report. Every change of one subscription locks its row first, so a charge, a
 * cancel and a revocation of it never interleave.
 */
@Injectable()
export class Subscriptions {
  constructor(
    private readonly db: PrismaService,
    private readonly payments: ChainPayments,
  ) {}

  async findByChallenge(scope: string, challengeId: string): Promise<SubscriptionRecord | undefined> {
    const row = await this.db.subscription.findUnique({ where: { scope_challengeId: { scope, challengeId } }, select: SUBSCRIPTION_SELECT });
    return row ? toRecord(row) : undefined;
  }

  async find(id: string): Promise<SubscriptionRecord | undefined> {
    const row = await this.db.subscription.findUnique({ where: { id }, select: SUBSCRIPTION_SELECT });
    return row ? toRecord(row) : undefined;
  }

  async findMany(ids: readonly string[]): Promise<Map<string, SubscriptionRecord>> {
    const rows = await this.db.subscription.findMany({ where: { id: { in: [...new Set(ids)] } }, select: SUBSCRIPTION_SELECT });
    return new Map(rows.map((row) => [row.id, toRecord(row)]));
  }

  /** The command ids of those charges already carried out or refused (by command id, or by subscription, period and attempt). */
  async doneCharges(keys: readonly ChargeCommandKey[], db: Pick<PrismaService, 'subscriptionCharge'> = this.db): Promise<Set<string>> {
    if (keys.length === 0) return new Set();
    const rows = await db.subscriptionCharge.findMany({
      where: {
        OR: [
          { commandId: { in: keys.map((k) => k.commandId) } },
          { subscriptionId: { in: [...new Set(keys.map((k) => k.subscriptionId))] }, periodIndex: { in: [...new Set(keys.map((k) => k.periodIndex))] } },
        ],
      },
      select: { commandId: true, subscriptionId: true, periodIndex: true, attempt: true },
    });
    const commands = new Set(rows.map((r) => r.commandId));
    const attempts = new Set(rows.map((r) => `${periodKey(r.subscriptionId, r.periodIndex)}:${r.attempt}`));
    return new Set(
      keys.filter((k) => commands.has(k.commandId) || attempts.has(`${periodKey(k.subscriptionId, k.periodIndex)}:${k.attempt}`)).map((k) => k.commandId),
    );
  }

  /** Each period's stored authorization and whether a payment of ours pays it: two reads for the whole batch. */
  async chargeFacts(
    periods: readonly { subscriptionId: string; periodIndex: number }[],
    db: Pick<PrismaService, 'subscriptionAuthorization' | 'payment'> = this.db,
  ): Promise<ChargeFacts> {
    const wanted = new Set(periods.map((p) => periodKey(p.subscriptionId, p.periodIndex)));
    const where = { in: [...new Set(periods.map((p) => p.subscriptionId))] };
    const indexes = { in: [...new Set(periods.map((p) => p.periodIndex))] };
    const [authorizations, payments] = await Promise.all([
      db.subscriptionAuthorization.findMany({ where: { subscriptionId: where, periodIndex: indexes } }),
      db.payment.findMany({
        where: { subscriptionId: where, subscriptionPeriod: indexes, state: { in: ['verified', 'submitted', 'confirmed'] } },
        select: { subscriptionId: true, subscriptionPeriod: true },
      }),
    ]);
    return {
      authorizations: new Map(
        authorizations
          .filter((a) => wanted.has(periodKey(a.subscriptionId, a.periodIndex)))
          .map((a) => [periodKey(a.subscriptionId, a.periodIndex), toStored(a)]),
      ),
      paidOrInFlight: new Set(payments.map((p) => periodKey(p.subscriptionId!, p.subscriptionPeriod!)).filter((k) => wanted.has(k))),
    };
  }

  async authorization(
    subscriptionId: string,
    periodIndex: number,
    db: Pick<PrismaService, 'subscriptionAuthorization'> = this.db,
  ): Promise<StoredAuthorization | undefined> {
    const row = await db.subscriptionAuthorization.findUnique({ where: { subscriptionId_periodIndex: { subscriptionId, periodIndex } } });
    return row ? toStored(row) : undefined;
  }

  /**
   * Activation, in one transaction: the period 0 payment (with subscription.activated before its payment.verified),
   * the subscription and its sealed authorizations. Undefined when the credential was activated already (its
   * challenge, or its period 0 authorization, is known): the caller follows the existing one.
   */
  activate(
    subscription: NewSubscription,
    authorizations: (Omit<StoredAuthorization, 'sealed' | 'keyId'> & { sealed: Buffer; keyId: string })[],
    payment: NewPayment,
  ): Promise<{ paymentId: string } | undefined> {
    return this.activateWith(subscription, payment, async (tx) => {
      await tx.subscriptionAuthorization.createMany({
        data: authorizations.map((a) => ({
          subscriptionId: subscription.id,
          periodIndex: a.periodIndex,
          nonce: a.nonce,
          validAfter: toDbDecimal(a.validAfter),
          validBefore: toDbDecimal(a.validBefore),
          sealed: new Uint8Array(a.sealed),
          keyId: a.keyId,
        })),
      });
    });
  }

  /**
   * The activation every rail shares, in one transaction: the period 0 payment, the subscription, then the rail's own
   * rows (`more`). Undefined when the credential was activated already (a unique key of any of them).
   */
  async activateWith(
    subscription: NewSubscription,
    payment: NewPayment,
    more: (tx: Tx, paymentId: string) => Promise<void>,
  ): Promise<{ paymentId: string } | undefined> {
    try {
      return await withTransaction(this.db, async (tx) => {
        const paymentId = await this.payments.claimWithin(tx, payment);
        if (!paymentId) return undefined;
        await tx.subscription.create({ data: { ...subscription, amount: toDbDecimal(subscription.amount), firstPaymentId: paymentId } });
        await more(tx, paymentId);
        return { paymentId };
      });
    } catch (error) {
      if (isUniqueViolation(error)) return undefined;
      throw error;
    }
  }

  /** The confirmed payment that paid period N, what a refund of that period refunds. */
  async paidCharge(subscriptionId: string, periodIndex: number): Promise<{ id: string; network: string; txHash: string | null } | undefined> {
    const row = await this.db.payment.findFirst({
      where: { subscriptionId, subscriptionPeriod: periodIndex, state: 'confirmed' },
      select: { id: true, network: true, txHash: true },
    });
    return row ?? undefined;
  }

  /**
   * A charge the ledger asked for that is not attempted: its row and its subscription.charge_refused event, once
   * (a second refusal of the same command writes nothing).
   */
  refuse(subscription: SubscriptionRecord, key: ChargeCommandKey, reason: ChargeRefusal, message: string): Promise<boolean> {
    return withTransaction(this.db, (tx) => this.refuseWithin(tx, subscription, key, reason, message));
  }

  /**
   * Charges, in one transaction: their subscriptions locked (in id order, so batches never deadlock), the commands not
   * done yet, the refusal rules checked again under the locks (`recheck`: a cancel or revocation may have landed
   * meanwhile), then each payment and charge row. Answers each item's payment id, the refusal written, or `done` when
   * its command was carried out by someone else. A batch that races another worker on one of its commands (a unique
   * key) is rolled back and carried out again one by one, so only that one answers `done`.
   */
  async chargeMany(
    items: readonly ChargeItem[],
    recheck: (locked: Map<string, SubscriptionRecord>, tx: Tx) => Promise<(Refusal | undefined)[]>,
  ): Promise<ChargeOutcome[]> {
    try {
      return await withTransaction(this.db, (tx) => this.chargeWithin(tx, items, recheck), { timeout: 30_000 });
    } catch (error) {
      if (!isUniqueViolation(error)) throw error;
      if (items.length === 1) return [{ kind: 'done' }];
      const outcomes: ChargeOutcome[] = [];
      for (const item of items) outcomes.push(...(await this.chargeMany([item], recheck)));
      return outcomes;
    }
  }

  private async chargeWithin(
    tx: Tx,
    items: readonly ChargeItem[],
    recheck: (locked: Map<string, SubscriptionRecord>, tx: Tx) => Promise<(Refusal | undefined)[]>,
  ): Promise<ChargeOutcome[]> {
    const locked = await this.lockMany(
      tx,
      items.map((i) => i.key.subscriptionId),
    );
    const done = await this.doneCharges(
      items.map((i) => i.key),
      tx,
    );
    const refusals = await recheck(locked, tx);
    // every payment the rules allow, claimed in one statement
    const claimable = items.flatMap((item, n) => (locked.has(item.key.subscriptionId) && !done.has(item.key.commandId) && !refusals[n] ? [n] : []));
    const claimedIds = await this.payments.claimManyWithin(
      tx,
      claimable.map((n) => items[n]!.payment),
    );
    const paymentIds = new Map(claimable.map((n, k) => [n, claimedIds[k]]));
    const outcomes: ChargeOutcome[] = [];
    const charged: { key: ChargeCommandKey; paymentId: string }[] = [];
    for (const [n, { key, payment }] of items.entries()) {
      const subscription = locked.get(key.subscriptionId);
      if (!subscription || done.has(key.commandId)) {
        outcomes.push({ kind: 'done' });
        continue;
      }
      const claimed = refusals[n] ?? (await this.claimPeriod(tx, key, payment, paymentIds.get(n)));
      if ('reason' in claimed) {
        await this.refuseWithin(tx, subscription, key, claimed.reason, claimed.message);
        outcomes.push({ kind: 'refused', reason: claimed.reason });
        continue;
      }
      charged.push({ key, paymentId: claimed.paymentId });
      outcomes.push({ kind: 'charged', paymentId: claimed.paymentId });
    }
    await tx.subscriptionCharge.createMany({
      data: charged.map(({ key, paymentId }) => ({
        subscriptionId: key.subscriptionId,
        periodIndex: key.periodIndex,
        attempt: key.attempt,
        commandId: key.commandId,
        outcome: 'charged',
        paymentId,
      })),
    });
    return outcomes;
  }

  /**
   * The period's payment (claimed by the caller: `paymentId`, undefined when its authorization was known), or why not:
   * its authorization has a payment already (an earlier attempt; one row per authorization).
   */
  private async claimPeriod(tx: Tx, key: ChargeCommandKey, payment: NewPayment, paymentId: string | undefined): Promise<{ paymentId: string } | Refusal> {
    if (paymentId) return { paymentId };
    const earlier = await tx.payment.findUnique({
      where: {
        network_asset_payer_authorizationNonce: { network: payment.network, asset: payment.asset, payer: payment.payer, authorizationNonce: payment.nonce },
      },
      select: { id: true, state: true, errorReason: true },
    });
    if (earlier === null || ['verified', 'submitted', 'confirmed'].includes(earlier.state))
      return { reason: 'already_paid', message: `period ${key.periodIndex}'s authorization already has a payment` };
    return {
      reason: 'rail_error',
      message: `period ${key.periodIndex}'s authorization has a ${earlier.state} payment (${earlier.id}, ${earlier.errorReason ?? 'no reason'}), which this profile does not send again`,
    };
  }

  /**
   * Carries out a cancel: at period end, the authorizations of periods starting at or after `effectiveAt` destroyed
   * and later periods refused; immediately, every authorization destroyed and the subscription canceled. Once per
   * command id; false when this command was carried out already.
   */
  cancel(subscriptionId: string, command: { commandId: string; at: 'period_end' | 'immediately'; effectiveAt: Date }, now: Date): Promise<boolean> {
    return withTransaction(this.db, async (tx) => {
      const locked = await this.lock(tx, subscriptionId);
      if (!locked || locked.cancelCommandId === command.commandId) return false;
      const immediate = command.at === 'immediately';
      await tx.subscription.update({
        where: { id: subscriptionId },
        data: {
          cancelAt: command.effectiveAt,
          cancelCommandId: command.commandId,
          updatedAt: now,
          ...(immediate && locked.state === 'active' && { state: 'canceled', canceledAt: now }),
        },
      });
      // a period starting at effectiveAt has validAfter = effectiveAt − 1 (seconds)
      const firstGone = BigInt(Math.ceil(command.effectiveAt.getTime() / 1000)) - 1n;
      await tx.subscriptionAuthorization.updateMany({
        where: { subscriptionId, destroyedAt: null, ...(!immediate && { validAfter: { gte: toDbDecimal(firstGone) } }) },
        data: { sealed: null, keyId: null, destroyedAt: now },
      });
      await this.event(tx, locked.firstPaymentId, 'subscription.canceled', {
        subscriptionId,
        commandId: command.commandId,
        at: command.at,
        effectiveAt: command.effectiveAt.toISOString(),
      });
      return true;
    });
  }

  /**
   * The payer withdrew the grant on chain: revoked once (every authorization destroyed, subscription.revoked), later
   * calls change nothing. False when it was revoked already.
   */
  revoke(subscriptionId: string, revocation: { reason: Revocation; message: string; at: Date; nonce?: string; txHash?: string }, now: Date): Promise<boolean> {
    return withTransaction(this.db, (tx) => this.revokeWithin(tx, subscriptionId, revocation, now));
  }

  /** The live subscriptions of a network whose payer and nonce match an AuthorizationCanceled log. */
  async matchCanceled(network: string, canceled: { authorizer: string; nonce: string }[]): Promise<{ subscriptionId: string; nonce: string; payer: string }[]> {
    if (canceled.length === 0) return [];
    const rows = await this.db.subscriptionAuthorization.findMany({
      where: {
        nonce: { in: canceled.map((c) => c.nonce.toLowerCase()) },
        // a canceled subscription's authorizations are destroyed already: nothing left to withdraw
        subscription: { network, state: 'active' },
      },
      select: { subscriptionId: true, nonce: true, subscription: { select: { payer: true } } },
    });
    const wanted = new Set(canceled.map((c) => `${c.authorizer.toLowerCase()}|${c.nonce.toLowerCase()}`));
    return rows
      .filter((r) => wanted.has(`${r.subscription.payer}|${r.nonce}`))
      .map((r) => ({ subscriptionId: r.subscriptionId, nonce: r.nonce, payer: r.subscription.payer }));
  }

  /** The tokens of a network that live subscriptions are paid in: what the revocation watcher reads logs of. */
  async liveAssets(network: string): Promise<string[]> {
    const rows = await this.db.subscription.findMany({ where: { network, state: 'active' }, distinct: ['asset'], select: { asset: true } });
    return rows.map((r) => r.asset);
  }

  async cursor(name: string): Promise<bigint | undefined> {
    const row = await this.db.chainCursor.findUnique({ where: { name } });
    return row ? fromDbDecimal(row.block) : undefined;
  }

  async setCursor(name: string, block: bigint): Promise<void> {
    await this.db.chainCursor.upsert({
      where: { name },
      create: { name, block: toDbDecimal(block) },
      update: { block: toDbDecimal(block), updatedAt: new Date() },
    });
  }

  private async refuseWithin(tx: Tx, subscription: SubscriptionRecord, key: ChargeCommandKey, reason: ChargeRefusal, message: string): Promise<boolean> {
    const inserted = await tx.subscriptionCharge.createMany({
      data: [{ subscriptionId: subscription.id, periodIndex: key.periodIndex, attempt: key.attempt, commandId: key.commandId, outcome: 'refused', reason }],
      skipDuplicates: true,
    });
    if (inserted.count === 0) return false;
    await this.event(tx, subscription.firstPaymentId, 'subscription.charge_refused', {
      subscriptionId: subscription.id,
      periodIndex: key.periodIndex,
      attempt: key.attempt,
      commandId: key.commandId,
      reason,
      message,
    });
    return true;
  }

  /** Revocation inside the caller's transaction (a charge that finds the authorization canceled on chain). */
  async revokeWithin(
    tx: Tx,
    subscriptionId: string,
    revocation: { reason: Revocation; message: string; at: Date; nonce?: string; txHash?: string },
    now: Date,
  ): Promise<boolean> {
    const locked = await this.lock(tx, subscriptionId);
    if (!locked || locked.state === 'revoked') return false;
    await tx.subscription.update({
      where: { id: subscriptionId },
      data: { state: 'revoked', revokedAt: revocation.at, revokeReason: revocation.reason, updatedAt: now },
    });
    await tx.subscriptionAuthorization.updateMany({ where: { subscriptionId, destroyedAt: null }, data: { sealed: null, keyId: null, destroyedAt: now } });
    await this.event(tx, locked.firstPaymentId, 'subscription.revoked', {
      subscriptionId,
      reason: revocation.reason,
      message: revocation.message,
      at: revocation.at.toISOString(),
      ...(revocation.nonce && { nonce: revocation.nonce }),
      ...(revocation.txHash && { txHash: revocation.txHash }),
    });
    return true;
  }

  /** The subscriptions' rows, locked for the rest of the transaction in id order (the order every batch takes them in). */
  private async lockMany(tx: Tx, ids: readonly string[]): Promise<Map<string, SubscriptionRecord>> {
    const sorted = [...new Set(ids)].sort();
    await tx.$queryRaw`SELECT id FROM facilitator.subscriptions WHERE id = ANY(${sorted}::text[]) ORDER BY id FOR UPDATE`;
    const rows = await tx.subscription.findMany({ where: { id: { in: sorted } }, select: SUBSCRIPTION_SELECT });
    return new Map(rows.map((row) => [row.id, toRecord(row)]));
  }

  /**
   * The subscription's row, locked for the rest of the transaction. Raw SQL: Prisma Client cannot express
   * SELECT … FOR UPDATE.
   */
  private async lock(tx: Tx, id: string): Promise<SubscriptionRecord | undefined> {
    const locked = await tx.$queryRaw<{ id: string }[]>`SELECT id FROM facilitator.subscriptions WHERE id = ${id} FOR UPDATE`;
    if (locked.length === 0) return undefined;
    const row = await tx.subscription.findUnique({ where: { id }, select: SUBSCRIPTION_SELECT });
    return row ? toRecord(row) : undefined;
  }

  /** One outbox event on the subscription's period 0 payment (the relay checks it against the contract's schema). */
  private async event<T extends PaymentEventType>(tx: Tx, paymentId: string, type: T, data: PaymentEventData<T>): Promise<void> {
    await tx.$executeRaw`
      INSERT INTO facilitator.payment_events (payment_id, type, data, trace_context)
      VALUES (${paymentId}::uuid, ${type}, ${JSON.stringify(data)}::jsonb, ${eventTraceContext()}::jsonb)`;
  }
}

function toStored(row: {
  periodIndex: number;
  nonce: string;
  validAfter: Parameters<typeof fromDbDecimal>[0];
  validBefore: Parameters<typeof fromDbDecimal>[0];
  sealed: Uint8Array | null;
  keyId: string | null;
}): StoredAuthorization {
  return {
    periodIndex: row.periodIndex,
    nonce: row.nonce,
    validAfter: fromDbDecimal(row.validAfter),
    validBefore: fromDbDecimal(row.validBefore),
    sealed: row.sealed ? Buffer.from(row.sealed) : null,
    keyId: row.keyId,
  };
}

export function toRecord(row: {
  id: string;
  scope: string;
  merchantId: string | null;
  challengeId: string;
  method: string;
  network: string;
  asset: string;
  payer: string;
  payTo: string;
  amount: Parameters<typeof fromDbDecimal>[0];
  periodUnit: string;
  periodCount: number;
  anchor: Date;
  expiresAt: Date | null;
  firstPaymentId: string;
  externalId: string | null;
  state: string;
  cancelAt: Date | null;
  cancelCommandId: string | null;
}): SubscriptionRecord {
  return {
    ...row,
    amount: fromDbDecimal(row.amount),
    periodUnit: row.periodUnit as SubscriptionRecord['periodUnit'],
    state: row.state as SubscriptionState,
  };
}
