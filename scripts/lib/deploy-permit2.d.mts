import type { PublicClient, WalletClient } from 'viem';

export declare const PERMIT2_ADDRESS: '0x000000000022D473030F116dDEE9F6B43aC78BA3';
export declare const X402_UPTO_PERMIT2_PROXY_ADDRESS: '0x4020A4f3b7b90ccA423B9fabCc0CE57C6C240002';

export declare function deployPermit2(opts: {
  publicClient: PublicClient;
  wallet: WalletClient;
  artifacts: Record<string, { abi: unknown[]; bytecode: `0x${string}` }>;
  nextNonce: () => number;
  txFees: { maxFeePerGas: bigint; maxPriorityFeePerGas: bigint };
  waitAll: (hashes: `0x${string}`[]) => Promise<unknown>;
  deployer: `0x${string}`;
  payers: { address: `0x${string}`; privateKey: `0x${string}` }[];
  smartWallet: `0x${string}`;
  tokens: `0x${string}`[];
}): Promise<{ permit2: `0x${string}`; x402UptoPermit2Proxy: `0x${string}` }>;

/** Throws unless every address has contract code (eth_call to an empty address succeeds silently). */
export declare function assertCodeAt(publicClient: PublicClient, addresses: Record<string, `0x${string}`>): Promise<void>;
