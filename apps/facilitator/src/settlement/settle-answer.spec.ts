import { X402Reason } from '@mp/x402';
import type { PaymentRecord, PaymentState } from './payment-record';
import { settleAnswer, settleFailure, type SettleAsker } from './settle-answer';

const startedAt = Date.parse('2026-12-01T12:00:00Z');
const time = { startedAt, now: startedAt + 1_000, deadline: startedAt + 60_000 };
const tx = `0x${'ab'.repeat(32)}`;
const asker: SettleAsker = { payer: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8', network: 'eip155:84532', fingerprint: 'payload-1', merchantId: 'merchant-1' };

function record(state: PaymentState, changes: Partial<PaymentRecord> = {}): PaymentRecord {
  return {
    id: 'payment-1',
    state,
    payloadHash: 'payload-1',
    txHash: null,
    signer: null,
    errorReason: null,
    errorMessage: null,
    updatedAt: new Date(startedAt - 5_000),
    merchantId: 'merchant-1',
    ...changes,
  };
}

const failure = (reason: string, message: string | undefined, transaction = '') => ({
  kind: 'answer',
  response: settleFailure(asker, reason, message, transaction),
});

describe('settleAnswer', () => {
  it('answers a confirmed payment with its transaction', () => {
    expect(settleAnswer(record('confirmed', { txHash: tx }), asker, time)).toEqual({
      kind: 'answer',
      response: { success: true, payer: asker.payer, transaction: tx, network: 'eip155:84532' },
    });
  });

  it('answers an expired payment with the reason it expired, and its transaction if one was sent', () => {
    expect(settleAnswer(record('expired', { errorMessage: 'the authorization expired before the settlement could be sent' }), asker, time)).toEqual(
      failure(X402Reason.exactEvmValidBefore, 'the authorization expired before the settlement could be sent'),
    );
    expect(settleAnswer(record('expired', { txHash: tx }), asker, time)).toEqual(
      failure(X402Reason.exactEvmValidBefore, 'the authorization expired before it could be settled', tx),
    );
  });

  it('answers a payment that failed on chain with its failure, however long ago', () => {
    const failed = record('failed', { txHash: tx, errorReason: X402Reason.exactEvmInsufficientBalance, errorMessage: 'balance too low' });
    expect(settleAnswer(failed, asker, time)).toEqual(failure(X402Reason.exactEvmInsufficientBalance, 'balance too low', tx));
  });

  it('answers a failure recorded while this request waited, though nothing reached the chain', () => {
    const failed = record('failed', {
      updatedAt: new Date(startedAt + 500),
      errorReason: X402Reason.exactEvmSimulationFailed,
      errorMessage: 'the transfer would revert',
    });
    expect(settleAnswer(failed, asker, time)).toEqual(failure(X402Reason.exactEvmSimulationFailed, 'the transfer would revert'));
    expect(settleAnswer(record('failed', { updatedAt: new Date(startedAt) }), asker, time)).toEqual(failure(X402Reason.exactEvmTransactionFailed, undefined));
  });

  it('retries a payment whose earlier attempt failed before anything reached the chain, with this payload or another', () => {
    expect(settleAnswer(record('failed', { errorReason: X402Reason.exactEvmSimulationFailed }), asker, time)).toEqual({ kind: 'retry' });
    expect(settleAnswer(record('failed', { payloadHash: 'payload-0' }), asker, time)).toEqual({ kind: 'retry' });
  });

  it.each(['verified', 'submitted'] as const)('waits on a %s payment until the deadline, then answers settlement_pending', (state) => {
    expect(settleAnswer(record(state), asker, time)).toEqual({ kind: 'wait' });
    expect(settleAnswer(record(state), asker, { ...time, now: time.deadline })).toEqual(
      failure(X402Reason.settlementPending, 'the settlement is queued; settle again to get its outcome'),
    );
    expect(settleAnswer(record(state, { txHash: tx }), asker, { ...time, now: time.deadline + 1 })).toEqual(
      failure(X402Reason.settlementPending, 'the transaction is not mined yet; settle again to get its outcome', tx),
    );
  });

  it('tells another merchant only that the authorization is taken, never its outcome', () => {
    const taken = failure(X402Reason.exactEvmNonceAlreadyUsed, 'this authorization was already presented to this facilitator');
    expect(settleAnswer(record('confirmed', { txHash: tx }), { ...asker, merchantId: 'merchant-2' }, time)).toEqual(taken);
    expect(settleAnswer(record('failed'), { ...asker, merchantId: null }, time)).toEqual(taken);
    expect(settleAnswer(record('verified', { merchantId: null }), asker, time)).toEqual(taken);
  });

  it('refuses a different payload for an authorization that is not failed', () => {
    const other = { ...asker, fingerprint: 'payload-2' };
    expect(settleAnswer(record('submitted'), other, time)).toEqual(
      failure(X402Reason.exactEvmNonceAlreadyUsed, 'this authorization was already presented with a different payload'),
    );
    expect(settleAnswer(record('confirmed', { txHash: tx }), other, time)).toEqual(
      failure(X402Reason.exactEvmNonceAlreadyUsed, `this authorization was already presented with a different payload and settled by ${tx}`),
    );
  });
});

describe('settleFailure', () => {
  it('leaves out an empty message', () => {
    expect(settleFailure(asker, X402Reason.unexpectedSettleError)).toEqual({
      success: false,
      errorReason: X402Reason.unexpectedSettleError,
      payer: asker.payer,
      transaction: '',
      network: asker.network,
    });
  });
});
