import type { PublicClient, WalletClient } from 'viem';

export declare function deploySessionEscrow(opts: {
  wallet: WalletClient;
  publicClient: PublicClient;
  artifact: { abi: readonly unknown[]; bytecode: `0x${string}` };
  nonce: number;
  txFees: { maxFeePerGas: bigint; maxPriorityFeePerGas: bigint };
}): Promise<`0x${string}`>;
