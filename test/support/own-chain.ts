import path from 'node:path';
import { createPublicClient, defineChain, http, type PublicClient } from 'viem';
import type { ChainManifest } from '@mp/chain';
import { startAnvil } from '../../scripts/lib/anvil.mjs';
import { deployLocalChain, writeManifest } from '../../scripts/lib/deploy.mjs';
import { freePort } from './net';

export interface OwnChain {
  manifest: ChainManifest;
  manifestPath: string;
  client: PublicClient;
  /** moves the chain's clock forward (and mines a block at the new time) */
  increaseTime(seconds: number): Promise<void>;
  /** the latest block's timestamp, unix seconds */
  now(): Promise<number>;
  stop(): Promise<void>;
}

/**
 * A chain of the spec's own (anvil with the same contracts, another chain id), for specs that move the chain's clock:
 * the shared test chain must keep the wall clock's time for every other spec.
 */
export async function startOwnChain(chainId: number): Promise<OwnChain> {
  const port = await freePort();
  const anvil = await startAnvil({ port, chainId });
  try {
    const manifest = (await deployLocalChain({ rpcUrl: anvil.rpcUrl })) as ChainManifest;
    const manifestPath = writeManifest(path.join(process.cwd(), '.local', `chain-own-${chainId}-${port}.json`), manifest) as string;
    const chain = defineChain({
      id: chainId,
      name: 'own anvil',
      nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
      rpcUrls: { default: { http: [anvil.rpcUrl] } },
    });
    const client = createPublicClient({ chain, transport: http(anvil.rpcUrl), pollingInterval: 50 });
    return {
      manifest,
      manifestPath,
      client,
      async increaseTime(seconds: number) {
        await client.request({ method: 'evm_increaseTime' as never, params: [seconds] as never });
        await client.request({ method: 'evm_mine' as never, params: [] as never });
      },
      async now() {
        return Number((await client.getBlock()).timestamp);
      },
      stop: () => anvil.stop(),
    };
  } catch (error) {
    await anvil.stop();
    throw error;
  }
}
