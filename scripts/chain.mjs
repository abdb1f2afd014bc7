#!/usr/bin/env node
// Local EVM chain for development:
//   node scripts/chain.mjs [--port 8545] [--host 127.0.0.1] [--public-rpc-url URL] [--manifest .local/chain.json] [--block-time <s>]
// Starts anvil, deploys the test contracts, funds the accounts, writes the manifest (always overwritten: every
// start is a fresh chain) and runs until SIGINT/SIGTERM.
import path from 'node:path';
import { parseArgs } from 'node:util';
import { startAnvil } from './lib/anvil.mjs';
import { REPO_ROOT } from './lib/contracts.mjs';
import { deployLocalChain, writeManifest } from './lib/deploy.mjs';

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '8545' },
    host: { type: 'string', default: '127.0.0.1' },
    'public-rpc-url': { type: 'string' },
    manifest: { type: 'string' },
    'block-time': { type: 'string' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});

if (values.help) {
  console.log('usage: node scripts/chain.mjs [--port 8545] [--host 127.0.0.1] [--public-rpc-url URL] [--manifest .local/chain.json] [--block-time <seconds>]');
  process.exit(0);
}

const port = Number(values.port);
const manifestPath = values.manifest ? path.resolve(values.manifest) : path.join(REPO_ROOT, '.local', 'chain.json');
const blockTime = values['block-time'] !== undefined ? Number(values['block-time']) : undefined;

let anvil;
async function shutdown(code) {
  try {
    await anvil?.stop();
  } finally {
    process.exit(code);
  }
}

try {
  const t0 = performance.now();
  anvil = await startAnvil({ port, host: values.host, blockTime });
  const manifest = await deployLocalChain({ rpcUrl: anvil.rpcUrl });
  // In containers the other services reach the chain by another name (e.g. http://chain:8545).
  if (values['public-rpc-url']) manifest.rpcUrl = values['public-rpc-url'];
  writeManifest(manifestPath, manifest);
  const ms = Math.round(performance.now() - t0);
  const shown = path.relative(process.cwd(), manifestPath);
  console.log(
    `chain ready: ${manifest.rpcUrl} (chain ${manifest.chainId}) USDC ${manifest.tokens.usdc.address} ` +
      `manifest ${shown.startsWith('..') ? manifestPath : shown} [${ms} ms]`,
  );
} catch (err) {
  console.error(`chain: ${err.message}`);
  await shutdown(1);
}

process.on('SIGINT', () => shutdown(0));
process.on('SIGTERM', () => shutdown(0));
