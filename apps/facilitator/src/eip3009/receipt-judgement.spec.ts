import { encodeAbiParameters, encodeEventTopics, type Address, type Hex, type Log, type TransactionReceipt } from 'viem';
import { eip3009Abi } from '@mp/chain';
import { judgeSettlementReceipt, sendFault, type SettledTransfer } from './receipt-judgement';

const token: Address = '0x036CbD53842c5426634e7929541eC2318f3dCF7e';
const otherToken: Address = '0x5FbDB2315678afecb367f032d93F642f64180aa3';
const payer: Address = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';
const merchant: Address = '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC';
const stranger: Address = '0x90f79BF6eB2C4F827D3e33A3AA5E0f41E2fa06E8';
const nonceA: Hex = `0x${'a1'.repeat(32)}`;
const nonceB: Hex = `0x${'b2'.repeat(32)}`;

const payment = (nonce: Hex, value = 25_000n): SettledTransfer => ({ asset: { address: token }, authorization: { from: payer, to: merchant, value, nonce } });

function transferLog(from: Address, to: Address, value: bigint, address: Address = token): Log {
  return log(address, encodeEventTopics({ abi: eip3009Abi, eventName: 'Transfer', args: { from, to } }), encodeAbiParameters([{ type: 'uint256' }], [value]));
}

function usedLog(authorizer: Address, nonce: Hex, address: Address = token): Log {
  return log(address, encodeEventTopics({ abi: eip3009Abi, eventName: 'AuthorizationUsed', args: { authorizer, nonce } }), '0x');
}

function log(address: Address, topics: readonly (Hex | Hex[] | null)[], data: Hex): Log {
  return {
    address,
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

function receipt(logs: Log[], status: 'success' | 'reverted' = 'success'): TransactionReceipt {
  return { status, logs, transactionHash: `0x${'77'.repeat(32)}` } as unknown as TransactionReceipt;
}

/** What a token logs for one settled authorization. */
const settled = (nonce: Hex, value = 25_000n) => [usedLog(payer, nonce), transferLog(payer, merchant, value)];

describe('judgeSettlementReceipt', () => {
  it('accepts a receipt that used the authorization and moved exactly the authorized transfer', () => {
    expect(judgeSettlementReceipt(payment(nonceA), receipt(settled(nonceA)))).toEqual({ success: true });
  });

  it('fails a reverted transaction, whatever it logged', () => {
    expect(judgeSettlementReceipt(payment(nonceA), receipt(settled(nonceA), 'reverted'))).toMatchObject({
      success: false,
      fault: 'transaction_failed',
      message: expect.stringContaining('reverted'),
    });
  });

  it('fails a receipt without an AuthorizationUsed for this nonce of this payer', () => {
    const mismatch = { success: false, fault: 'transfer_mismatch', message: expect.stringContaining(`did not use authorization ${nonceA}`) };
    expect(judgeSettlementReceipt(payment(nonceA), receipt([transferLog(payer, merchant, 25_000n)]))).toMatchObject(mismatch);
    expect(judgeSettlementReceipt(payment(nonceA), receipt(settled(nonceB)))).toMatchObject(mismatch);
    expect(judgeSettlementReceipt(payment(nonceA), receipt([usedLog(stranger, nonceA), transferLog(payer, merchant, 25_000n)]))).toMatchObject(mismatch);
    // Another token's log proves nothing about this one.
    expect(judgeSettlementReceipt(payment(nonceA), receipt([usedLog(payer, nonceA, otherToken), transferLog(payer, merchant, 25_000n)]))).toMatchObject(
      mismatch,
    );
  });

  it('fails a receipt whose Transfer has the wrong amount or recipient', () => {
    const mismatch = { success: false, fault: 'transfer_mismatch', message: expect.stringContaining('has no Transfer of 25000') };
    expect(judgeSettlementReceipt(payment(nonceA), receipt([usedLog(payer, nonceA), transferLog(payer, merchant, 24_999n)]))).toMatchObject(mismatch);
    expect(judgeSettlementReceipt(payment(nonceA), receipt([usedLog(payer, nonceA), transferLog(payer, stranger, 25_000n)]))).toMatchObject(mismatch);
    expect(judgeSettlementReceipt(payment(nonceA), receipt([usedLog(payer, nonceA), transferLog(payer, merchant, 25_000n, otherToken)]))).toMatchObject(
      mismatch,
    );
  });

  it('tells apart several payments of one payer carried by one batch', () => {
    const batch = receipt([...settled(nonceA), ...settled(nonceB, 10_000n)]);
    expect(judgeSettlementReceipt(payment(nonceA), batch)).toEqual({ success: true });
    expect(judgeSettlementReceipt(payment(nonceB, 10_000n), batch)).toEqual({ success: true });
    // Alike payments: one whose own call failed inside the batch is not carried by its twin's logs.
    const nonceC: Hex = `0x${'c3'.repeat(32)}`;
    expect(judgeSettlementReceipt(payment(nonceC), batch)).toMatchObject({ success: false, fault: 'transfer_mismatch' });
  });

  it("decodes a batch receipt's logs once, however many of its payments are judged against it", () => {
    const nonces = Array.from({ length: 40 }, (_, i) => `0x${i.toString(16).padStart(64, '0')}` as Hex);
    const logs = nonces.flatMap((nonce) => settled(nonce));
    let reads = 0;
    const batch = receipt([]);
    Object.defineProperty(batch, 'logs', {
      get: () => {
        reads += 1;
        return logs;
      },
    });
    for (const nonce of nonces) expect(judgeSettlementReceipt(payment(nonce), batch)).toEqual({ success: true });
    expect(judgeSettlementReceipt(payment(nonceA), batch)).toMatchObject({ success: false });
    expect(reads).toBe(1);
  });
});

describe('sendFault', () => {
  it.each([
    ['insufficient funds for gas * price + value', 'facilitator_unable'],
    ['gas required exceeds allowance (30000000)', 'facilitator_unable'],
    ['execution reverted: FiatTokenV2: authorization is expired', 'expires_too_soon'],
    ['execution reverted: AuthorizationExpired()', 'expires_too_soon'],
    ['execution reverted: FiatTokenV2: authorization is not yet valid', 'not_yet_valid'],
    ['execution reverted: AuthorizationNotYetValid()', 'not_yet_valid'],
    ['execution reverted: FiatTokenV2: authorization is used or canceled', 'nonce_used'],
    ['execution reverted: AuthorizationUsedOrCanceled()', 'nonce_used'],
    ['execution reverted: ERC20: transfer amount exceeds balance', 'insufficient_balance'],
    ['execution reverted: ERC20InsufficientBalance(0x7099, 0, 25000)', 'insufficient_balance'],
    ['execution reverted: FiatTokenV2: invalid signature', 'signature_invalid'],
    ['execution reverted: SignerMismatch()', 'signature_invalid'],
    ['execution reverted', 'transaction_failed'],
  ])('maps "%s" to %s', (message, reason) => {
    expect(sendFault(new Error(message))).toBe(reason);
  });

  it('reads a thrown non-error as text', () => {
    expect(sendFault('insufficient funds for intrinsic transaction cost')).toBe('facilitator_unable');
    expect(sendFault(undefined)).toBe('transaction_failed');
  });
});
