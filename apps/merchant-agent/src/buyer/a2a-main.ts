import 'reflect-metadata';
import { resolve } from 'node:path';
import type { Hex } from 'viem';
import { loadChainManifest } from '@mp/chain';
import { buyFromAgent } from './a2a-buyer';

/**
 * `node dist/.../buyer/a2a-main.js [skill [input…]]` (default `forecast Lisbon`): buys a skill of the merchant's A2A
 * agent (its card under MERCHANT_A2A_URL) with a funded local payer and prints the purchase, receipt included.
 * BUYER_A2A_BINDING=HTTP+JSON and BUYER_A2A_VERSION=0.3 pick another of the card's interfaces.
 */
async function main(): Promise<void> {
  const manifest = loadChainManifest(resolve(process.env.CHAIN_MANIFEST ?? '.local/chain.json'));
  const request = process.argv.slice(2).join(' ') || 'forecast Lisbon';
  const purchase = await buyFromAgent(
    {
      agentUrl: process.env.MERCHANT_A2A_URL ?? 'http://127.0.0.1:4040',
      privateKey: (process.env.BUYER_PRIVATE_KEY ?? manifest.accounts.payers[0].privateKey) as Hex,
      network: manifest.network as `${string}:${string}`,
      asset: process.env.BUYER_ASSET ?? manifest.tokens.usdc.address,
      maxAmountPerPayment: process.env.BUYER_MAX_AMOUNT ?? '1000000',
      binding: process.env.BUYER_A2A_BINDING === 'HTTP+JSON' ? 'HTTP+JSON' : 'JSONRPC',
      protocolVersion: process.env.BUYER_A2A_VERSION === '0.3' ? '0.3' : '1.0',
      log: (line) => console.log(`a2a buyer: ${line}`),
    },
    request,
  );
  console.log(JSON.stringify(purchase));
  const free = purchase.outcome === 'message';
  if (!free && (purchase.outcome !== 'TASK_STATE_COMPLETED' || !purchase.receipt)) process.exit(1);
}

main().catch((error: unknown) => {
  console.error('a2a buyer failed:', error instanceof Error ? error.message : error);
  process.exit(1);
});
