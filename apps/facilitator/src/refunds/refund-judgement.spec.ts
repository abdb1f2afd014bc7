import { encodeAbiParameters, encodeEventTopics, erc20Abi, type Address, type Hex, type Log } from 'viem';
import { judgeRefundReceipt, refundCalldata, unminedTransaction, type RefundTransfer } from './refund-judgement';

const token = '0x1111111111111111111111111111111111111111' as Address;
const wallet = '0x2222222222222222222222222222222222222222' as Address;
const payer = '0x3333333333333333333333333333333333333333' as Address;
const hash = `0x${'ab'.repeat(32)}` as Hex;
const transfer: RefundTransfer = { token, from: wallet, to: payer, amount: 700n };

const transferLog = (address: Address, from: Address, to: Address, value: bigint) =>
  ({
    address,
    topics: encodeEventTopics({ abi: erc20Abi, eventName: 'Transfer', args: { from, to } }),
    data: encodeAbiParameters([{ type: 'uint256' }], [value]),
    blockHash: hash,
    blockNumber: 1n,
    logIndex: 0,
    transactionHash: hash,
    transactionIndex: 0,
    removed: false,
  }) as unknown as Log<bigint, number, false>;

describe('judging a mined refund', () => {
  it('executed only with the exact Transfer from the refund wallet to the refund address', () => {
    expect(judgeRefundReceipt(transfer, { status: 'success', transactionHash: hash, logs: [transferLog(token, wallet, payer, 700n)] })).toEqual({
      executed: true,
    });
  });

  it('a revert, another amount, recipient, sender or token is not a refund', () => {
    expect(judgeRefundReceipt(transfer, { status: 'reverted', transactionHash: hash, logs: [] })).toMatchObject({
      executed: false,
      reason: 'transaction_reverted',
    });
    for (const log of [
      transferLog(token, wallet, payer, 699n),
      transferLog(token, wallet, wallet, 700n),
      transferLog(token, payer, payer, 700n),
      transferLog('0x4444444444444444444444444444444444444444', wallet, payer, 700n),
    ])
      expect(judgeRefundReceipt(transfer, { status: 'success', transactionHash: hash, logs: [log] })).toMatchObject({
        executed: false,
        reason: 'transfer_mismatch',
      });
  });

  it('calls transfer(to, amount) on the token', () => {
    expect(refundCalldata(transfer).slice(0, 10)).toBe('0xa9059cbb');
  });
});

describe('a recorded refund transaction without a receipt', () => {
  it('is dead once its nonce was mined by another transaction, else broadcast again', () => {
    expect(unminedTransaction(5, 6)).toBe('dead');
    expect(unminedTransaction(5, 5)).toBe('rebroadcast');
    expect(unminedTransaction(5, 3)).toBe('rebroadcast');
  });
});
