import { X402Reason, type SettleResponse } from '@mp/x402';
import { problemOf, problemOfOutcome } from './evm-problems';

const failed = (errorReason: string, errorMessage?: string, transaction = ''): SettleResponse => ({
  success: false,
  errorReason,
  ...(errorMessage ? { errorMessage } : {}),
  payer: '0x857b06519E91e3A54538791bDbb0E22373e36b66',
  transaction,
  network: 'eip155:31337',
});

describe('problemOf (a rail fault of an evm credential)', () => {
  it('answers an expiring authorization payment-expired, our own inability internal-payment-error, the rest verification-failed', () => {
    expect(problemOf('expires_too_soon', 'too soon').code).toBe('payment-expired');
    expect(problemOf('facilitator_unable', 'no signer').code).toBe('internal-payment-error');
    expect(problemOf('signature_invalid', 'not the payer').code).toBe('verification-failed');
    expect(problemOf('insufficient_balance', 'poor').code).toBe('verification-failed');
  });

  it('names the reason the payment records use in the detail', () => {
    expect(problemOf('nonce_used', 'nonce 0xab is used')).toEqual({
      code: 'verification-failed',
      detail: `nonce 0xab is used (${X402Reason.exactEvmNonceAlreadyUsed})`,
    });
  });
});

describe('problemOfOutcome (a failed settlement of an evm credential)', () => {
  it('keeps the claim (not final) while the outcome is pending or unexpected', () => {
    expect(problemOfOutcome(failed(X402Reason.settlementPending, 'queued', '0x12'))).toEqual({
      error: { code: 'internal-payment-error', detail: `queued (${X402Reason.settlementPending}); transaction 0x12` },
      final: false,
    });
    expect(problemOfOutcome(failed(X402Reason.unexpectedSettleError)).final).toBe(false);
  });

  it('ends it (final) for the payer-side failures, an expiry as payment-expired', () => {
    expect(problemOfOutcome(failed(X402Reason.exactEvmValidBefore, 'expired'))).toEqual({
      error: { code: 'payment-expired', detail: `expired (${X402Reason.exactEvmValidBefore})` },
      final: true,
    });
    expect(problemOfOutcome(failed(X402Reason.exactEvmTransactionFailed, 'reverted', '0x34'))).toMatchObject({
      error: { code: 'verification-failed' },
      final: true,
    });
  });
});
