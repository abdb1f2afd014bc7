import { createPublicClient, defineChain, fallback, type Address, type Chain, type Hex, type PublicClient } from 'viem';
import { batchedHttp } from './rpc-transport';

/** A token the facilitator accepts, with the EIP-712 domain its EIP-3009 signatures use. */
export interface AssetConfig {
  address: Address;
  symbol: string;
  decimals: number;
  /** EIP-712 domain name and version, e.g. "USD Coin" / "2" for USDC on Base. */
  eip712: { name: string; version: string };
  /**
   * Refuse settlements whose gas would cost more than `maxShareBps` basis points of the payment, pricing gas with
   * `nativePrice`: atomic units of this asset that one whole native token (10^18 wei) is worth. Unset: no cap.
   */
  gasCap?: { maxShareBps: number; nativePrice: bigint };
}

export interface NetworkConfig {
  /** CAIP-2 id, e.g. eip155:8453. */
  network: string;
  chainId: number;
  displayName: string;
  /** x402 v1 names that map to this network, e.g. ["base"]. */
  v1Names: string[];
  rpcUrls: string[];
  assets: AssetConfig[];
  /** Private keys of the hot wallets that submit settlements. Never logged. */
  signerKeys: Hex[];
  /** Receipt polling interval; viem's default of 4 s on custom chains stalls every settlement. */
  pollingIntervalMs: number;
  /**
   * Blocks a settlement's block must have on top of it, itself included, before its outcome is recorded (1: the block
   * that mined it). Confirmed payments are watched for reorgs for max(64, 4 × this) blocks.
   */
  confirmations: number;
  /** ERC-6492 factories whose counterfactual wallets may be deployed at settlement (default: none, fail closed). */
  eip6492AllowedFactories: Address[];
  /** Fee ceiling per gas for every send and replacement (MAX_FEE_PER_GAS_WEI); unset: none. */
  maxFeePerGas?: bigint;
  /** The MPP evm session escrow (EvmPaymentChannelEscrow) on this network; unset: no sessions on it. */
  sessionEscrow?: Address;
  /** Local chain only: the manifest merchant's key, the default session payee (SESSION_PAYEE_KEYS unset). */
  sessionPayeeKey?: Hex;
}

function toViemChain(config: NetworkConfig): Chain {
  return defineChain({
    id: config.chainId,
    name: config.displayName,
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: config.rpcUrls } },
  });
}

/**
 * One public client per network: every RPC URL behind a fallback, JSON-RPC batching so concurrent
 * verifications share HTTP round trips (batchedHttp, which does not wait when the node is idle), and requests over
 * keep-alive node:http(s) rather than fetch (keepAliveFetch).
 */
export function createNetworkClient(config: NetworkConfig, timeoutMs = 10_000): PublicClient {
  const transports = config.rpcUrls.map((url) => batchedHttp(url, { timeout: timeoutMs, retryCount: 1 }));
  return createPublicClient({
    chain: toViemChain(config),
    transport: transports.length === 1 ? transports[0] : fallback(transports, { rank: false }),
    pollingInterval: config.pollingIntervalMs,
    batch: { multicall: false },
  });
}
