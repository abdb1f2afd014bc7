import { randomBytes } from 'node:crypto';
import { computeChannelId } from '@x402/evm/batch-settlement/client';
import { getAddress, toHex, zeroAddress, type Address } from 'viem';
import {
  BatchSettlementReason,
  channelConfigProblem,
  channelIdOf,
  decodeBatchSettlementPayload,
  erc3009WindowProblem,
  voucherStateProblem,
  type ChannelConfigWire,
} from './batch-settlement-evm';

const CHAIN_ID = 31_337;
const NETWORK = `eip155:${CHAIN_ID}` as const;
const payer = { address: getAddress(toHex(randomBytes(20))) };
const receiver = getAddress(toHex(randomBytes(20)));
const authorizer = getAddress(toHex(randomBytes(20)));
const token = getAddress(toHex(randomBytes(20)));

const requirements = {
  scheme: 'batch-settlement',
  network: NETWORK,
  amount: '1000',
  asset: token,
  payTo: receiver,
  maxTimeoutSeconds: 300,
  extra: { name: 'USD Coin', version: '2', receiverAuthorizer: authorizer, withdrawDelay: 900 },
};

function config(over: Partial<ChannelConfigWire> = {}): ChannelConfigWire {
  return {
    payer: payer.address,
    payerAuthorizer: zeroAddress,
    receiver,
    receiverAuthorizer: authorizer,
    token,
    withdrawDelay: 900,
    salt: toHex(randomBytes(32)),
    ...over,
  };
}

describe('batch-settlement EVM codec', () => {
  it('computes the channel id the official client computes, bound to the chain', () => {
    for (let i = 0; i < 5; i++) {
      const c = config({ payerAuthorizer: i % 2 ? payer.address : zeroAddress, withdrawDelay: 900 + i });
      expect(channelIdOf(c, CHAIN_ID)).toBe(computeChannelId(c as never, NETWORK));
      expect(channelIdOf(c, CHAIN_ID + 1)).not.toBe(channelIdOf(c, CHAIN_ID));
    }
  });

  it('answers an unknown type with the protocol reason and bad fields with their names', () => {
    expect(decodeBatchSettlementPayload({ type: 'teleport' })).toMatchObject({ ok: false, kind: 'invalid', reason: BatchSettlementReason.payloadType });
    expect(decodeBatchSettlementPayload('nope')).toMatchObject({ ok: false, kind: 'invalid', reason: BatchSettlementReason.payloadType });
    const c = config();
    const voucher = { channelId: channelIdOf(c, CHAIN_ID), maxClaimableAmount: '5', signature: toHex(randomBytes(65)) };
    expect(decodeBatchSettlementPayload({ type: 'voucher', channelConfig: c, voucher })).toMatchObject({ ok: true });
    const bad = decodeBatchSettlementPayload({
      type: 'voucher',
      channelConfig: { ...c, withdrawDelay: '900' },
      voucher: { ...voucher, maxClaimableAmount: '-1' },
    });
    expect(bad.ok).toBe(false);
    const fields = (bad as { issues: { field: string }[] }).issues.map((i) => i.field);
    expect(fields).toEqual(expect.arrayContaining(['paymentPayload.payload.channelConfig.withdrawDelay', 'paymentPayload.payload.voucher.maxClaimableAmount']));
    expect(decodeBatchSettlementPayload({ type: 'claim', claims: [] })).toMatchObject({ ok: false, kind: 'malformed' });
    expect(decodeBatchSettlementPayload({ type: 'settle', receiver, token })).toMatchObject({ ok: true });
    // uint128 overflow is a malformed amount, not a chain revert later
    expect(
      decodeBatchSettlementPayload({ type: 'voucher', channelConfig: c, voucher: { ...voucher, maxClaimableAmount: (1n << 128n).toString() } }),
    ).toMatchObject({
      ok: false,
      kind: 'malformed',
    });
  });

  it('checks the channel config in the spec order', () => {
    const check = (c: ChannelConfigWire, extra: Record<string, unknown> = requirements.extra, id = channelIdOf(c, CHAIN_ID)) =>
      channelConfigProblem(c, id, { ...requirements, extra }, CHAIN_ID)?.reason;
    const other = getAddress(toHex(randomBytes(20))) as Address;
    expect(check(config(), requirements.extra, channelIdOf(config(), CHAIN_ID))).toBe(BatchSettlementReason.channelIdMismatch);
    expect(check(config({ receiver: other }))).toBe(BatchSettlementReason.receiverMismatch);
    expect(check(config({ receiverAuthorizer: other }))).toBe(BatchSettlementReason.receiverAuthorizerMismatch);
    expect(check(config({ receiverAuthorizer: zeroAddress }), { ...requirements.extra, receiverAuthorizer: zeroAddress })).toBe(
      BatchSettlementReason.receiverAuthorizerMismatch,
    );
    expect(check(config({ token: other }))).toBe(BatchSettlementReason.tokenMismatch);
    expect(check(config({ withdrawDelay: 1000 }))).toBe(BatchSettlementReason.withdrawDelayMismatch);
    expect(check(config({ withdrawDelay: 899 }), { ...requirements.extra, withdrawDelay: 899 })).toBe(BatchSettlementReason.withdrawDelayOutOfRange);
    expect(check(config({ withdrawDelay: 2_592_001 }), { ...requirements.extra, withdrawDelay: undefined })).toBe(
      BatchSettlementReason.withdrawDelayOutOfRange,
    );
    // addresses compare case-insensitively
    expect(check(config({ receiver: receiver.toLowerCase() as Address }))).toBeUndefined();
  });

  it('checks vouchers against the channel state', () => {
    const state = { balance: 1000n, totalClaimed: 300n, withdrawRequestedAt: 0, refundNonce: 0n };
    expect(voucherStateProblem('voucher', 500n, { ...state, balance: 0n })?.reason).toBe(BatchSettlementReason.channelNotFound);
    expect(voucherStateProblem('voucher', 1001n, state)?.reason).toBe(BatchSettlementReason.cumulativeExceedsBalance);
    expect(voucherStateProblem('voucher', 300n, state)?.reason).toBe(BatchSettlementReason.cumulativeBelowClaimed);
    expect(voucherStateProblem('refund', 300n, state)).toBeUndefined();
    expect(voucherStateProblem('voucher', 301n, state)).toBeUndefined();
    // a deposit counts toward the escrow, and a fresh channel is not "not found"
    expect(voucherStateProblem('deposit', 1500n, { ...state, balance: 0n, totalClaimed: 0n }, 1500n)).toBeUndefined();
    expect(voucherStateProblem('deposit', 1501n, { ...state, balance: 0n, totalClaimed: 0n }, 1500n)?.reason).toBe(
      BatchSettlementReason.cumulativeExceedsBalance,
    );
  });

  it('checks the ERC-3009 deposit window', () => {
    expect(erc3009WindowProblem({ validAfter: '0', validBefore: '1006' }, 1000)).toBeUndefined();
    expect(erc3009WindowProblem({ validAfter: '0', validBefore: '1005' }, 1000)?.reason).toBe(BatchSettlementReason.validBefore);
    expect(erc3009WindowProblem({ validAfter: '1001', validBefore: '2000' }, 1000)?.reason).toBe(BatchSettlementReason.validAfter);
  });
});
