import { encodeAbiParameters, encodeEventTopics, type Address, type Hex, type Log, type TransactionReceipt } from 'viem';
import { eip3009Abi } from '@mp/chain';
import type { SettledTransfer } from '../eip3009/receipt-judgement';
import { chainVerdict } from './chain-verdict';

const token: Address = '0x036CbD53842c5426634e7929541eC2318f3dCF7e';
const payer: Address = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';
const merchant: Address = '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC';
const nonce: Hex = `0x${'a1'.repeat(32)}`;
const transfer: SettledTransfer = { asset: { address: token }, authorization: { from: payer, to: merchant, value: 25_000n, nonce } };

const first: Hex = `0x${'01'.repeat(32)}`;
const second: Hex = `0x${'02'.repeat(32)}`;
const foreign: Hex = `0x${'ff'.repeat(32)}`;

function log(topics: readonly (Hex | Hex[] | null)[], data: Hex): Log {
  return {
    address: token,
    topics: topics as [Hex, ...Hex[]],
    data,
    blockHash: null,
    blockNumber: null,
    logIndex: null,
    transactionHash: null,
    transactionIndex: null,
    removed: false,
  };
}
const used = log(encodeEventTopics({ abi: eip3009Abi, eventName: 'AuthorizationUsed', args: { authorizer: payer, nonce } }), '0x');
const transferred = log(
  encodeEventTopics({ abi: eip3009Abi, eventName: 'Transfer', args: { from: payer, to: merchant } }),
  encodeAbiParameters([{ type: 'uint256' }], [25_000n]),
);

function receipt(hash: Hex, logs: Log[], status: 'success' | 'reverted' = 'success'): TransactionReceipt {
  return { status, logs, transactionHash: hash } as unknown as TransactionReceipt;
}
const carrying = (hash: Hex) => receipt(hash, [used, transferred]);
const reverted = (hash: Hex) => receipt(hash, [], 'reverted');

describe('chainVerdict', () => {
  describe('carried', () => {
    it('by the oldest of our transactions that made the transfer, without asking about the authorization', () => {
      const verdict = chainVerdict({
        transfer,
        ours: [
          { hash: first, receipt: carrying(first) },
          { hash: second, receipt: carrying(second) },
        ],
      });
      expect(verdict).toMatchObject({ kind: 'carried', hash: first });
    });

    it('by a later transaction of ours when the first reverted (a replacement, a resend)', () => {
      const verdict = chainVerdict({
        transfer,
        ours: [
          { hash: first, receipt: reverted(first) },
          { hash: second, receipt: carrying(second) },
        ],
      });
      expect(verdict).toMatchObject({ kind: 'carried', hash: second });
    });

    it('by our transaction that used the authorization, once its receipt shows the transfer', () => {
      const verdict = chainVerdict({
        transfer,
        ours: [{ hash: first, receipt: undefined }],
        use: { used: true, canceled: false, transaction: first },
        useReceipt: carrying(first),
      });
      expect(verdict).toMatchObject({ kind: 'carried', hash: first });
    });
  });

  describe('taken', () => {
    it('by a transaction this facilitator did not send', () => {
      const verdict = chainVerdict({ transfer, ours: [{ hash: first, receipt: reverted(first) }], use: { used: true, canceled: false, transaction: foreign } });
      expect(verdict).toEqual({ kind: 'taken', message: `authorization ${nonce} was used by transaction ${foreign}, which this facilitator did not send` });
    });

    it("by the payer's cancellation", () => {
      const verdict = chainVerdict({ transfer, ours: [{ hash: first, receipt: undefined }], use: { used: true, canceled: true, transaction: foreign } });
      expect(verdict).toEqual({ kind: 'taken', message: `the payer canceled authorization ${nonce} in ${foreign}` });
    });

    it('when it is used, the log is out of reach, and every one of ours that was mined shows no transfer', () => {
      const verdict = chainVerdict({
        transfer,
        ours: [{ hash: first, receipt: reverted(first) }],
        use: { used: true, canceled: false, transaction: undefined },
      });
      expect(verdict).toMatchObject({ kind: 'taken', message: expect.stringContaining('no transaction of ours shows the transfer') });
    });

    it('by our own transaction whose token misreports: it used the authorization but logged no matching transfer', () => {
      const misreported = receipt(first, [used]);
      const verdict = chainVerdict({
        transfer,
        ours: [{ hash: first, receipt: misreported }],
        use: { used: true, canceled: false, transaction: first },
        useReceipt: misreported,
      });
      expect(verdict).toEqual({ kind: 'taken', message: `authorization ${nonce} was used by our transaction ${first} without the transfer it authorizes` });
    });
  });

  describe('open', () => {
    it('when none of ours carried it and the authorization is unused', () => {
      expect(chainVerdict({ transfer, ours: [{ hash: first, receipt: reverted(first) }], use: { used: false } })).toEqual({ kind: 'open' });
      expect(chainVerdict({ transfer, ours: [], use: { used: false } })).toEqual({ kind: 'open' });
    });
  });

  describe('unknown', () => {
    it('when it is used by a transaction this node does not show, and none of ours was mined', () => {
      const verdict = chainVerdict({ transfer, ours: [{ hash: first, receipt: undefined }], use: { used: true, canceled: false, transaction: undefined } });
      expect(verdict).toMatchObject({ kind: 'unknown', message: expect.stringContaining('this node does not show yet') });
    });

    it('when our transaction used it but its receipt is not shown yet', () => {
      const verdict = chainVerdict({ transfer, ours: [{ hash: first, receipt: undefined }], use: { used: true, canceled: false, transaction: first } });
      expect(verdict).toMatchObject({ kind: 'unknown', message: expect.stringContaining('whose receipt this node does not show yet') });
    });

    it('when nothing carried it and the authorization was not read', () => {
      expect(chainVerdict({ transfer, ours: [{ hash: first, receipt: reverted(first) }] })).toMatchObject({ kind: 'unknown' });
    });
  });

  it("matches our transactions whatever the hash's letter case", () => {
    const upper = `0x${'AB'.repeat(32)}` as Hex;
    const verdict = chainVerdict({
      transfer,
      ours: [{ hash: upper.toLowerCase() as Hex, receipt: undefined }],
      use: { used: true, canceled: false, transaction: upper },
      useReceipt: carrying(upper),
    });
    expect(verdict).toMatchObject({ kind: 'carried', hash: upper });
  });
});
