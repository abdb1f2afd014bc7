import type { PublicClient, WalletClient } from 'viem';

export declare const BATCH_SETTLEMENT_ADDRESS: '0x4020074e9dF2ce1deE5A9C1b5c3f541D02a10003';
export declare const ERC3009_DEPOSIT_COLLECTOR_ADDRESS: '0x4020806089470a89826cB9fB1f4059150b550004';
export declare const PERMIT2_DEPOSIT_COLLECTOR_ADDRESS: '0x4020425FAf3B746C082C2f942b4E5159887B0005';

export declare function deployBatchSettlement(ctx: {
  publicClient: PublicClient;
  wallet: WalletClient;
  artifacts: Record<string, { abi: unknown[]; bytecode: `0x${string}` }>;
  nextNonce: () => number;
  txFees: object;
}): Promise<{ batchSettlement: `0x${string}`; erc3009DepositCollector: `0x${string}` }>;
