import { parsePaymentEventMessage, type PaymentEventMessage } from '@mp/clients';
import { chartAccountId, paymentTransferId, TransferCode } from '@mp/ledger';
import { bookingStep, paymentAsset, refundTransfer } from './payment-booking';

const paymentId = '5b1f6a52-2f0e-4c7e-9a43-3f6f7d0b9e21';
const refundId = '0d7a3c55-9d0f-4b8e-8f1e-1c2b3a4d5e6f';
const hash = `0x${'AB'.repeat(32)}`;

function message(type: string, data: Record<string, unknown>): PaymentEventMessage {
  const parsed = parsePaymentEventMessage({
    eventId: '7',
    type,
    paymentId,
    merchantId: '6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b',
    occurredAt: '2026-12-02T00:00:00.000Z',
    data,
    payment: {
      id: paymentId,
      state: 'confirmed',
      protocol: 'x402',
      rail: 'evm',
      network: 'eip155:84532',
      asset: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
      payer: '0x277b6edc5e0664bda72eb0c84fe1e44af4befe6e',
      payTo: '0xcdaf545f03d8da01c298d8604f29d4c80493f6b2',
      amount: '10000',
      nonce: `0x${'01'.repeat(32)}`,
      scheme: 'exact',
      challengeId: null,
      reference: null,
      txHash: `0x${'02'.repeat(32)}`,
      merchantId: '6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b',
    },
  });
  if (!parsed.ok) throw new Error(parsed.reason);
  return parsed.message;
}

const refund = { refundId, amount: '4000', reason: 'service_not_delivered', idempotencyKey: 'k-1', refundTo: null };

describe('booking refunds', () => {
  it('payment.refunded is a transfer of its own, revenue → payerClearing, id from the refund, reference its transaction', () => {
    const event = message('payment.refunded', { ...refund, reference: hash });
    const step = bookingStep(event);
    expect(step).toEqual({ kind: 'refund', refund: { refundId, amount: 4000n, reference: hash.toLowerCase() } });
    const asset = paymentAsset(event);
    expect(refundTransfer(event, asset, (step as Extract<typeof step, { kind: 'refund' }>).refund)).toEqual({
      id: paymentTransferId(paymentId, `refund:${refundId}`),
      debitAccountId: chartAccountId('revenue', asset),
      creditAccountId: chartAccountId('payerClearing', asset),
      amount: 4000n,
      asset,
      code: TransferCode.refund,
      flags: 0,
      reference: hash.toLowerCase(),
    });
  });

  it('a Stripe refund is referenced by its re_ id as is; two refunds of one payment have two ids', () => {
    const event = message('payment.refunded', { ...refund, reference: 're_3AbC' });
    expect(bookingStep(event)).toMatchObject({ kind: 'refund', refund: { reference: 're_3AbC' } });
    const other = refundTransfer(event, 'a', { refundId: '1d7a3c55-9d0f-4b8e-8f1e-1c2b3a4d5e6f', amount: 1n, reference: 'x' });
    expect(other.id).not.toBe(refundTransfer(event, 'a', { refundId, amount: 1n, reference: 'x' }).id);
  });

  it('a pending or failed refund books nothing', () => {
    expect(bookingStep(message('payment.refund_pending', refund))).toEqual({ kind: 'none' });
    expect(bookingStep(message('payment.refund_failed', { ...refund, reference: null, failureReason: 'transaction_reverted', message: 'reverted' }))).toEqual({
      kind: 'none',
    });
  });
});
