import 'reflect-metadata';
import { resolve } from 'node:path';
import type { Hex } from 'viem';
import { loadChainManifest } from '@mp/chain';
import { buy } from './buyer';

/** `node dist/.../buyer/main.js [url]`: pays for the merchant's forecast with a funded local payer. */
async function main(): Promise<void> {
  const manifest = loadChainManifest(resolve(process.env.CHAIN_MANIFEST ?? '.local/chain.json'));
  const url = process.argv[2] ?? process.env.MERCHANT_URL ?? 'http://127.0.0.1:4040/paid/forecast';
  const purchase = await buy({
    url,
    privateKey: (process.env.BUYER_PRIVATE_KEY ?? manifest.accounts.payers[0].privateKey) as Hex,
    network: manifest.network as `${string}:${string}`,
    asset: process.env.BUYER_ASSET ?? manifest.tokens.usdc.address,
    maxAmountPerPayment: process.env.BUYER_MAX_AMOUNT ?? '1000000',
    log: (line) => console.log(`buyer: ${line}`),
  });
  console.log(JSON.stringify(purchase));
  if (purchase.status !== 200 || !purchase.transaction) process.exit(1);
}

main().catch((error: unknown) => {
  console.error('buyer failed:', error instanceof Error ? error.message : error);
  process.exit(1);
});
