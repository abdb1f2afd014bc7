import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { createPublicClient, createWalletClient, defineChain, http, type Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { loadChainManifest } from '@mp/chain';
import { EvmSessionChannelClient, streamWithSession } from '@mp/clients/evm-session';

const USAGE = `usage: node scripts/session-buyer.mjs <url> [--deposit <atomic>] [--open hash|authorization] [--max <atomic>] [--no-close]
Streams a metered SSE resource paid through an MPP evm session: opens a channel in the escrow, answers each
payment-need-voucher with a cumulative voucher (topping up when needed), and closes at the end (close = spent).
The payer key is BUYER_PRIVATE_KEY (default: the local chain's first payer); the chain is CHAIN_MANIFEST's.`;

/** `node dist/.../mpp/session-buyer.main.js <url> [...]`: one metered session, messages to stdout, progress to stderr. */
async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      deposit: { type: 'string' },
      open: { type: 'string' },
      max: { type: 'string' },
      'no-close': { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  });
  const url = positionals[0];
  if (values.help || !url) {
    console.error(USAGE);
    process.exit(values.help ? 0 : 2);
  }
  const atomic = (name: string, value: string | undefined) => {
    if (value === undefined) return undefined;
    if (!/^[0-9]+$/.test(value)) throw new Error(`--${name} must be a whole number of atomic units`);
    return BigInt(value);
  };
  if (values.open !== undefined && values.open !== 'hash' && values.open !== 'authorization') throw new Error('--open must be hash or authorization');

  const manifest = loadChainManifest(resolve(process.env.CHAIN_MANIFEST ?? '.local/chain.json'));
  const chain = defineChain({
    id: manifest.chainId,
    name: manifest.network,
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [manifest.rpcUrl] } },
  });
  const account = privateKeyToAccount((process.env.BUYER_PRIVATE_KEY ?? manifest.accounts.payers[0].privateKey) as Hex);
  const publicClient = createPublicClient({ chain, transport: http(manifest.rpcUrl) });
  const wallet = createWalletClient({ account, chain, transport: http(manifest.rpcUrl) });
  const client = new EvmSessionChannelClient(publicClient, { address: account.address, signer: account, wallet });

  const result = await streamWithSession(url, {
    client,
    deposit: atomic('deposit', values.deposit),
    open: values.open as 'hash' | 'authorization' | undefined,
    maxCumulative: atomic('max', values.max),
    close: !values['no-close'],
    onMessage: (data) => console.log(data),
    onEvent: ({ kind, detail }) => console.error(`session: ${kind} ${JSON.stringify(detail)}`),
  });
  console.error(
    `session: done ${JSON.stringify({
      channelId: result.channel.channelId,
      messages: result.messages,
      spent: result.receipt?.spent,
      acceptedCumulative: result.receipt?.acceptedCumulative,
      closeTx: result.closeReceipt?.txHash,
    })}`,
  );
}

main().catch((error: unknown) => {
  console.error('session buyer failed:', error instanceof Error ? error.message : error);
  process.exit(1);
});
