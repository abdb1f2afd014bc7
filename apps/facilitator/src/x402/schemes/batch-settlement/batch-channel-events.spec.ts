import { encodeAbiParameters, encodeEventTopics, encodeFunctionData, getAbiItem, type Address, type Hex, type Log, type TransactionReceipt } from 'viem';
import { batchSettlementAbi } from '@mp/chain';
import { channelSnapshotSchema } from '@mp/clients';
import { BATCH_SETTLEMENT_ADDRESS, channelIdOf, ERC3009_DEPOSIT_COLLECTOR_ADDRESS } from '@mp/x402';
import { batchSnapshot, receiptMoves } from './batch-channel-events';

const CHAIN_ID = 31337;
const config = {
  payer: '0x00000000000000000000000000000000000000a1' as Address,
  payerAuthorizer: '0x00000000000000000000000000000000000000a1' as Address,
  receiver: '0x00000000000000000000000000000000000000b2' as Address,
  receiverAuthorizer: '0x00000000000000000000000000000000000000b3' as Address,
  token: '0x00000000000000000000000000000000000000c4' as Address,
  withdrawDelay: 900,
  salt: `0x${'07'.repeat(32)}` as Hex,
};
const channelId = channelIdOf(config, CHAIN_ID).toLowerCase() as Hex;
const SENDER = '0x00000000000000000000000000000000000000d5' as Address;

/** A log of the batch-settlement ABI's `name` event, emitted by `address`. */
function log(
  name: 'Deposited' | 'Claimed' | 'Refunded' | 'Settled',
  args: Record<string, unknown>,
  address: Address = BATCH_SETTLEMENT_ADDRESS,
  logIndex = 0,
): Log {
  const event = getAbiItem({ abi: batchSettlementAbi, name }) as { inputs: readonly { name: string; type: string; indexed?: boolean }[] };
  const topics = encodeEventTopics({ abi: batchSettlementAbi, eventName: name, args: args as never });
  const data = encodeAbiParameters(
    event.inputs.filter((i) => !i.indexed),
    event.inputs.filter((i) => !i.indexed).map((i) => args[i.name]),
  );
  return {
    address,
    topics: topics as [Hex, ...Hex[]],
    data,
    logIndex,
    blockNumber: 7n,
    blockHash: `0x${'00'.repeat(32)}`,
    transactionHash: `0x${'ee'.repeat(32)}`,
    transactionIndex: 0,
    removed: false,
  } as Log;
}
const receipt = (...logs: Log[]) => ({ logs, status: 'success', blockNumber: 7n, transactionHash: `0x${'ee'.repeat(32)}` }) as unknown as TransactionReceipt;
const claimRow = (totalClaimed: bigint) => ({ voucher: { channel: config, maxClaimableAmount: totalClaimed }, signature: '0x01' as Hex, totalClaimed });

describe('batch channel moves from a receipt', () => {
  it("takes a deposit's amount from its Deposited log, with the parties from its calldata", () => {
    const data = encodeFunctionData({ abi: batchSettlementAbi, functionName: 'deposit', args: [config, 10_000n, ERC3009_DEPOSIT_COLLECTOR_ADDRESS, '0x'] });
    const moves = receiptMoves(
      data,
      receipt(
        // another contract's event of the same shape counts for nothing
        log('Deposited', { channelId, sender: SENDER, amount: 99n, newBalance: 99n }, '0x00000000000000000000000000000000000000ff'),
        log('Deposited', { channelId, sender: SENDER, amount: 10_000n, newBalance: 15_000n }, BATCH_SETTLEMENT_ADDRESS, 1),
      ),
      CHAIN_ID,
    );
    expect(moves).toEqual([{ kind: 'deposit', channelId, parties: { payer: config.payer, receiver: config.receiver, token: config.token }, amount: 10_000n }]);
  });

  it("takes a claim + refund multicall's claimed total and refund from its logs, in log order; a no-op claim row moves nothing", () => {
    const claim = encodeFunctionData({ abi: batchSettlementAbi, functionName: 'claimWithSignature', args: [[claimRow(5000n)], '0x02'] });
    const refund = encodeFunctionData({ abi: batchSettlementAbi, functionName: 'refundWithSignature', args: [config, 3000n, 0n, '0x03'] });
    const data = encodeFunctionData({ abi: batchSettlementAbi, functionName: 'multicall', args: [[claim, refund]] });
    expect(
      receiptMoves(
        data,
        receipt(
          log('Claimed', { channelId, sender: SENDER, claimAmount: 1000n, newTotalClaimed: 5000n }),
          log('Refunded', { channelId, sender: SENDER, amount: 3000n }, BATCH_SETTLEMENT_ADDRESS, 1),
        ),
        CHAIN_ID,
      ),
    ).toEqual([
      { kind: 'claim', channelId, totalClaimed: 5000n },
      { kind: 'refund', channelId, amount: 3000n },
    ]);
    // the contract skips a row at or below the recorded total: no Claimed log, no move
    expect(receiptMoves(claim, receipt(), CHAIN_ID)).toEqual([]);
  });

  it('writes snapshots the channel-events contract accepts, spent held back between the two events of a claim', () => {
    const row = {
      channelId,
      network: 'eip155:31337',
      merchantId: '5f0c6b8e-3c1d-4d5e-8f9a-0b1c2d3e4f50',
      payer: config.payer,
      receiver: config.receiver,
      token: config.token,
      deposited: 10_000n,
      claimed: 5000n,
      settled: 4000n,
      refunded: 3000n,
    };
    const snapshot = batchSnapshot(row, 4000n);
    expect(channelSnapshotSchema.parse(snapshot)).toMatchObject({
      scheme: 'x402-batch',
      escrow: BATCH_SETTLEMENT_ADDRESS.toLowerCase(),
      payee: config.receiver,
      deposit: '10000',
      acceptedCumulative: '5000',
      spent: '4000',
      settled: '4000',
      refunded: '3000',
      state: 'open',
    });
    expect(batchSnapshot(row).spent).toBe('5000');
  });
});
