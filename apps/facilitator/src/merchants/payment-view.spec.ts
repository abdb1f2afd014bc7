import { paymentSnapshotSchema } from '@mp/clients';
import { paymentSnapshot, toPaymentView, type PaymentViewRow } from './payment-view';

describe('one snapshot of a payment', () => {
  const row: PaymentViewRow = {
    id: '3f1c2a9e-5b7d-4c1e-9a2b-6d8e0f4a7b31',
    state: 'confirmed',
    protocol: 'x402',
    rail: 'evm',
    network: 'eip155:8453',
    asset: '0x833589fcd6edb6e08f4c7c32d4f71b54bda02913',
    payer: '0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266',
    payTo: '0x70997970c51812dc3a010c7d01b50e0d17dc79c8',
    amount: '10000',
    nonce: `0x${'01'.repeat(32)}`,
    scheme: 'exact',
    challengeId: null,
    reference: null,
    txHash: `0x${'ab'.repeat(32)}`,
    merchantId: '0b6f0b43-6a55-4a47-9a3c-0d7c6f0e9b1d',
    subscriptionId: null,
    subscriptionPeriod: null,
    subscriptionAttempt: null,
    x402Version: 2,
    paymentIdentifier: 'pay_123',
    errorReason: null,
    errorMessage: null,
    createdAt: new Date('2026-12-01T15:00:00.000Z'),
    updatedAt: new Date('2026-12-01T15:00:01.000Z'),
    settledAt: new Date('2026-12-01T15:00:02.000Z'),
  };

  it('the outbox snapshot is the row as recorded, and meets the payment-events contract', () => {
    const snapshot = paymentSnapshot(row);
    expect(snapshot).toEqual({
      id: row.id,
      state: 'confirmed',
      protocol: 'x402',
      rail: 'evm',
      network: 'eip155:8453',
      asset: row.asset,
      payer: row.payer,
      payTo: row.payTo,
      amount: '10000',
      nonce: row.nonce,
      scheme: 'exact',
      challengeId: null,
      reference: null,
      txHash: row.txHash,
      merchantId: row.merchantId,
    });
    expect(paymentSnapshotSchema.parse(snapshot)).toEqual(snapshot);
  });

  it('a subscription charge’s snapshot carries subscription {id, periodIndex, attempt}; the merchant’s view does not (yet)', () => {
    const charge: PaymentViewRow = { ...row, subscriptionId: 'q1w2e3r4t5y6u7i8o9p0aa', subscriptionPeriod: 3, subscriptionAttempt: 1 };
    const snapshot = paymentSnapshot(charge);
    expect(snapshot.subscription).toEqual({ id: 'q1w2e3r4t5y6u7i8o9p0aa', periodIndex: 3, attempt: 1 });
    expect(paymentSnapshotSchema.parse(snapshot)).toEqual(snapshot);
    expect(toPaymentView(charge)).not.toHaveProperty('subscription');
  });

  it('the merchant’s view is the same snapshot, checksummed, without the merchant id, with the row’s details', () => {
    const { merchantId: _merchantId, ...shared } = paymentSnapshot(row);
    expect(toPaymentView(row)).toEqual({
      ...shared,
      asset: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
      payer: '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266',
      payTo: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
      x402Version: 2,
      paymentIdentifier: 'pay_123',
      errorReason: null,
      errorMessage: null,
      createdAt: '2026-12-01T15:00:00.000Z',
      updatedAt: '2026-12-01T15:00:01.000Z',
      settledAt: '2026-12-01T15:00:02.000Z',
    });
  });

  it('a Stripe payment’s asset and parties are left as they are', () => {
    const stripe: PaymentViewRow = {
      ...row,
      protocol: 'mpp',
      rail: 'stripe',
      network: 'stripe',
      asset: 'usd',
      payer: 'spt_1',
      payTo: 'profile_1',
      txHash: null,
      reference: 'pi_1',
      settledAt: null,
    };
    expect(toPaymentView(stripe)).toMatchObject({ asset: 'usd', payer: 'spt_1', payTo: 'profile_1', reference: 'pi_1', txHash: null, settledAt: null });
    expect(paymentSnapshot(stripe)).toMatchObject({ asset: 'usd', payer: 'spt_1', payTo: 'profile_1', reference: 'pi_1' });
  });
});
