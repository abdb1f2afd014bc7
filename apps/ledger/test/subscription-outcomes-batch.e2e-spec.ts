import { randomUUID } from 'node:crypto';
import type { MockInstance } from 'vitest';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import type { PaymentEventMessage } from '@mp/clients';
import { BookingRefusedError } from '../src/ingestion/payment-ingestion.service';
import { SubscriptionLifecycle, SubscriptionNotYetKnownError } from '../src/billing/subscription-lifecycle.service';
import { SubscriptionsRepository } from '../src/billing/subscriptions.repository';
import { startLedger, type RunningLedger } from '../../../test/support/ledger-app';
import { chargePayment, events, newSubscriptionId, type SubscriptionTerms } from './support/subscriptions-world';

const NETWORK = 'eip155:31337';
const TOKEN = '0x5fbdb2315678afecb367f032d93f642f64180aa3';

/**
 * The charge outcomes of concurrent ingestion jobs share a transaction (SubscriptionLifecycle.applyOutcomes): each
 * still applied once, each job with its own outcome, and one event's problem stays its own.
 */
describe('charge outcomes applied in batches', () => {
  let ledger: RunningLedger;
  let lifecycle: SubscriptionLifecycle;
  let lockMany: MockInstance<SubscriptionsRepository['lockMany']>;
  const merchantId = randomUUID();

  beforeAll(async () => {
    ledger = await startLedger();
    lifecycle = ledger.app.get(SubscriptionLifecycle);
    // a real call, counted: which subscriptions each batch locked together
    lockMany = vi.spyOn(ledger.app.get(SubscriptionsRepository), 'lockMany');
  });
  afterAll(async () => {
    lockMany?.mockRestore();
    await ledger?.close();
  });

  /** Activated subscriptions (period 0 charge requested), with the confirmation of that charge. */
  async function activated(count: number, merchant = merchantId): Promise<{ terms: SubscriptionTerms; confirmed: PaymentEventMessage }[]> {
    const now = new Date();
    const made = [];
    for (let i = 0; i < count; i++) {
      const terms: SubscriptionTerms = {
        subscriptionId: newSubscriptionId(),
        merchantId: merchant,
        payer: privateKeyToAccount(generatePrivateKey()).address,
        payTo: '0x70997970c51812dc3a010c7d01b50e0d17dc79c8',
        amount: '10000',
        asset: TOKEN,
        network: NETWORK,
        periodUnit: 'month',
        periodCount: 1,
        anchor: now,
      };
      const payment = chargePayment(terms, 0, 0);
      expect(await lifecycle.ingest(events.activated(terms, payment, now))).toBe('applied');
      made.push({ terms, confirmed: events.confirmed(payment, now) });
    }
    return made;
  }

  const periodZero = async (subscriptionId: string) =>
    ledger.db.ledgerSubscriptionCharge.findMany({ where: { subscriptionId, periodIndex: 0 }, select: { attempt: true, state: true } });
  const batchesWith = (ids: string[]) => lockMany.mock.calls.filter(([, locked]) => locked.length > 1 && ids.some((id) => locked.includes(id)));

  it('applies concurrent confirmations together, each once, and their redeliveries as duplicates', async () => {
    const subs = await activated(6);
    lockMany.mockClear();
    expect(await Promise.all(subs.map((s) => lifecycle.ingest(s.confirmed)))).toEqual(Array(6).fill('applied'));
    expect(batchesWith(subs.map((s) => s.terms.subscriptionId)).length).toBeGreaterThan(0);
    for (const { terms } of subs) {
      expect(await periodZero(terms.subscriptionId)).toEqual([{ attempt: 0, state: 'paid' }]);
      expect(await ledger.db.ledgerSubscription.findFirst({ where: { id: terms.subscriptionId }, select: { state: true, lastPaidIndex: true } })).toEqual({
        state: 'active',
        lastPaidIndex: 0,
      });
    }
    const versions = await ledger.db.ledgerSubscriptionTransition.count({ where: { subscriptionId: { in: subs.map((s) => s.terms.subscriptionId) } } });

    expect(await Promise.all(subs.map((s) => lifecycle.ingest(s.confirmed)))).toEqual(Array(6).fill('duplicate'));
    expect(await ledger.db.ledgerSubscriptionTransition.count({ where: { subscriptionId: { in: subs.map((s) => s.terms.subscriptionId) } } })).toBe(versions);
  });

  it("an outcome for a subscription not recorded yet, or another merchant's, fails its own job only", async () => {
    const subs = await activated(4);
    const [other] = await activated(1, randomUUID());
    const unknown = { ...subs[0].terms, subscriptionId: newSubscriptionId() };
    const early = events.confirmed(chargePayment(unknown, 0, 0), new Date());
    const foreign = { ...other.confirmed, merchantId, payment: { ...other.confirmed.payment, merchantId } } as PaymentEventMessage;
    lockMany.mockClear();
    const outcomes = await Promise.allSettled([...subs.map((s) => lifecycle.ingest(s.confirmed)), lifecycle.ingest(early), lifecycle.ingest(foreign)]);
    expect(outcomes.slice(0, 4)).toEqual(Array(4).fill({ status: 'fulfilled', value: 'applied' }));
    expect(outcomes[4]).toMatchObject({ status: 'rejected', reason: expect.any(SubscriptionNotYetKnownError) });
    expect(outcomes[5]).toMatchObject({ status: 'rejected', reason: expect.any(BookingRefusedError) });
    // they were tried together first, then one by one
    expect(batchesWith([unknown.subscriptionId]).length).toBeGreaterThan(0);
    for (const { terms } of subs) expect(await periodZero(terms.subscriptionId)).toEqual([{ attempt: 0, state: 'paid' }]);
    expect(await periodZero(other.terms.subscriptionId)).toEqual([{ attempt: 0, state: 'requested' }]);
    // the refused events left no receipt: once the activation is in, the early one applies
    expect(await ledger.db.ledgerSubscriptionEventReceipt.count({ where: { eventId: { in: [early.eventId, foreign.eventId] } } })).toBe(0);
  });

  it('takes a batch job’s events in order: an activation before its confirmation, outcomes of several subscriptions in one transaction', async () => {
    const subs = await activated(3);
    const now = new Date();
    const fresh: SubscriptionTerms = { ...subs[0].terms, subscriptionId: newSubscriptionId(), payer: privateKeyToAccount(generatePrivateKey()).address };
    const payment = chargePayment(fresh, 0, 0);
    const batch = [events.activated(fresh, payment, now), events.verified(payment, now), ...subs.map((s) => s.confirmed), events.confirmed(payment, now)];
    lockMany.mockClear();
    expect(await lifecycle.ingestMany(batch)).toEqual(['applied', 'skipped', 'applied', 'applied', 'applied', 'applied']);
    // the outcomes in a row shared one transaction, the fresh subscription's among them
    expect(lockMany.mock.calls.map(([, ids]) => [...ids].sort())).toEqual([[...subs.map((s) => s.terms.subscriptionId), fresh.subscriptionId].sort()]);
    for (const id of [...subs.map((s) => s.terms.subscriptionId), fresh.subscriptionId]) expect(await periodZero(id)).toEqual([{ attempt: 0, state: 'paid' }]);

    // the same batch again: every event a duplicate, nothing changed
    expect(await lifecycle.ingestMany(batch)).toEqual(['duplicate', 'skipped', 'duplicate', 'duplicate', 'duplicate', 'duplicate']);
  });

  it('answers a refused event of a batch, or one of a subscription not recorded yet, with its failure, and applies the rest', async () => {
    const subs = await activated(2);
    const [other] = await activated(1, randomUUID());
    const foreign = { ...other.confirmed, merchantId, payment: { ...other.confirmed.payment, merchantId } } as PaymentEventMessage;
    const outcomes = await lifecycle.ingestMany([subs[0].confirmed, foreign, subs[1].confirmed]);
    expect(outcomes).toEqual(['applied', expect.any(BookingRefusedError), 'applied']);
    expect(await periodZero(other.terms.subscriptionId)).toEqual([{ attempt: 0, state: 'requested' }]);

    const unknown = { ...subs[0].terms, subscriptionId: newSubscriptionId() };
    const [late] = await activated(1);
    expect(await lifecycle.ingestMany([events.confirmed(chargePayment(unknown, 0, 0), new Date()), late.confirmed])).toEqual([
      expect.any(SubscriptionNotYetKnownError),
      'applied',
    ]);
  });
});
