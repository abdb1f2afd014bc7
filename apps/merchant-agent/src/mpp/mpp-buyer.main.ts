import { resolve } from 'node:path';
import type { Hex } from 'viem';
import { loadChainManifest } from '@mp/chain';
import { buyWithMpp } from './mpp-buyer';

/**
 * `node dist/.../mpp/mpp-buyer.main.js <evm|stripe> [url]`: buys the merchant's MPP forecast with the local
 * chain's payer (evm) or a test card through the (fake) Stripe API (stripe), and prints the purchase as JSON.
 */
async function main(): Promise<void> {
  const method = process.argv[2];
  if (method !== 'evm' && method !== 'stripe') throw new Error('usage: mpp-buyer.main.js <evm|stripe> [url]');
  const url = process.argv[3] ?? process.env.MERCHANT_MPP_URL ?? 'http://127.0.0.1:4040/mpp/forecast';
  const manifest = loadChainManifest(resolve(process.env.CHAIN_MANIFEST ?? '.local/chain.json'));
  const usdc = manifest.tokens.usdc;
  const purchase = await buyWithMpp({
    url,
    body: { city: 'Lisbon' },
    method,
    evm: { privateKey: (process.env.BUYER_PRIVATE_KEY ?? manifest.accounts.payers[0].privateKey) as Hex, name: usdc.name, version: usdc.version },
    stripe: {
      apiBase: process.env.BUYER_STRIPE_API_BASE ?? 'http://127.0.0.1:12111',
      secretKey: process.env.BUYER_STRIPE_SECRET_KEY ?? 'sk_test_buyer_platform',
      paymentMethod: process.env.BUYER_STRIPE_PAYMENT_METHOD ?? 'pm_card_visa',
    },
    log: (line) => console.log(`buyer: ${line}`),
  });
  console.log(JSON.stringify(purchase));
  if (purchase.status !== 200 || !purchase.receipt) process.exit(1);
}

main().catch((error: unknown) => {
  console.error('buyer failed:', error instanceof Error ? error.message : error);
  process.exit(1);
});
