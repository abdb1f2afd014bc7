import { X402Reason } from '@mp/x402';
import type { TransferFault } from '../eip3009/transfer-authorization.rail';
import { recordedReason } from './recorded-reason';

const faults: TransferFault[] = [
  'network_not_served',
  'asset_not_accepted',
  'signature_invalid',
  'signature_unparseable',
  'factory_not_allowed',
  'recipient_mismatch',
  'expires_too_soon',
  'not_yet_valid',
  'value_mismatch',
  'asset_not_contract',
  'token_name_mismatch',
  'token_version_mismatch',
  'eip3009_unsupported',
  'nonce_used',
  'insufficient_balance',
  'simulation_failed',
  'transaction_failed',
  'transfer_mismatch',
  'facilitator_unable',
];

describe('recordedReason', () => {
  it('records each fault under its own x402 reason, so a record tells the faults apart', () => {
    const reasons = faults.map(recordedReason);
    expect(new Set(reasons).size).toBe(faults.length);
    expect(reasons.every((reason) => (Object.values(X402Reason) as string[]).includes(reason))).toBe(true);
  });

  it('keeps the reasons records have always carried', () => {
    expect(recordedReason('expires_too_soon')).toBe('invalid_exact_evm_payload_authorization_valid_before');
    expect(recordedReason('nonce_used')).toBe('invalid_exact_evm_nonce_already_used');
    expect(recordedReason('simulation_failed')).toBe('invalid_exact_evm_transaction_simulation_failed');
    expect(recordedReason('facilitator_unable')).toBe('unexpected_settle_error');
  });
});
