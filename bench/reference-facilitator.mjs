#!/usr/bin/env node
// The peer for bench/x402-facilitator.mjs: the reference x402 facilitator, built the way the x402
// repository's example facilitator builds it (examples/typescript/facilitator/basic/index.ts):
// @x402/core's x402Facilitator + @x402/evm's ExactEvmScheme (facilitator side) over
// toFacilitatorEvmSigner(viem wallet client + public actions), in a minimal Express 5 server.
//
// Deliberately untuned: viem defaults everywhere (no pollingInterval, no nonce manager, no batching),
// SDK defaults for ExactEvmScheme and for toFacilitatorEvmSigner (its receipt waits are bounded by the
// SDK's default confirmationTimeoutMs, 180 s, so nothing hangs forever). The example's console.log
// lifecycle hooks are left out: they would only slow the peer down.
//
// Usage:
//   node bench/reference-facilitator.mjs --port 4521 --rpc-url http://127.0.0.1:8547 \
//     --private-key 0x… [--token 0x…] [--host 127.0.0.1]
// or the env vars REFERENCE_PORT, RPC_URL, REFERENCE_PRIVATE_KEY, REFERENCE_TOKEN, REFERENCE_HOST.
// --token (optional) is only checked at start-up: the server refuses to start if it has no code.
//
// Routes: POST /verify, POST /settle (the SDK's result as JSON, HTTP 200; HTTP 500 {error} on exceptions),
// GET /supported.
import { parseArgs } from 'node:util';
import express from 'express';
import { createWalletClient, defineChain, http, publicActions } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { x402Facilitator } from '@x402/core/facilitator';
import { toFacilitatorEvmSigner } from '@x402/evm';
import { ExactEvmScheme } from '@x402/evm/exact/facilitator';

const { values: args } = parseArgs({
  options: {
    port: { type: 'string', default: process.env.REFERENCE_PORT ?? '4521' },
    host: { type: 'string', default: process.env.REFERENCE_HOST ?? '127.0.0.1' },
    'rpc-url': { type: 'string', default: process.env.RPC_URL ?? 'http://127.0.0.1:8547' },
    'private-key': { type: 'string', default: process.env.REFERENCE_PRIVATE_KEY },
    token: { type: 'string', default: process.env.REFERENCE_TOKEN },
  },
});

if (!/^0x[0-9a-fA-F]{64}$/.test(args['private-key'] ?? '')) {
  console.error('reference facilitator: --private-key (or REFERENCE_PRIVATE_KEY) must be a 0x-prefixed 32-byte key');
  process.exit(2);
}
const rpcUrl = args['rpc-url'];
const port = Number(args.port);

// The chain id comes from the node itself (one eth_chainId at start-up); viem needs a chain object for a
// custom chain, and defineChain without blockTime is exactly what a user of the example would write.
const chainId = await fetch(rpcUrl, {
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }),
})
  .then((r) => r.json())
  .then((b) => Number(b.result));
if (!Number.isInteger(chainId) || chainId <= 0) {
  console.error(`reference facilitator: cannot read the chain id from ${rpcUrl}`);
  process.exit(2);
}
const network = `eip155:${chainId}`;
const chain = defineChain({
  id: chainId,
  name: `Local ${chainId}`,
  nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
  rpcUrls: { default: { http: [rpcUrl] } },
});

const account = privateKeyToAccount(args['private-key']);
const viemClient = createWalletClient({ account, chain, transport: http(rpcUrl) }).extend(publicActions);

if (args.token) {
  const code = await viemClient.getCode({ address: args.token });
  if (!code || code === '0x') {
    console.error(`reference facilitator: token ${args.token} has no code on ${rpcUrl}`);
    process.exit(2);
  }
}

const facilitator = new x402Facilitator().register(network, new ExactEvmScheme(toFacilitatorEvmSigner({ ...viemClient, address: account.address })));

const app = express();
app.use(express.json());

app.post('/verify', async (req, res) => {
  try {
    const { paymentPayload, paymentRequirements } = req.body ?? {};
    if (!paymentPayload || !paymentRequirements) {
      return res.status(400).json({ error: 'Missing paymentPayload or paymentRequirements' });
    }
    res.json(await facilitator.verify(paymentPayload, paymentRequirements));
  } catch (error) {
    res.status(500).json({ error: error instanceof Error ? error.message : 'Unknown error' });
  }
});

app.post('/settle', async (req, res) => {
  try {
    const { paymentPayload, paymentRequirements } = req.body ?? {};
    if (!paymentPayload || !paymentRequirements) {
      return res.status(400).json({ error: 'Missing paymentPayload or paymentRequirements' });
    }
    res.json(await facilitator.settle(paymentPayload, paymentRequirements));
  } catch (error) {
    // As in the example: a hook abort is a failed settlement, anything else a 500.
    if (error instanceof Error && error.message.includes('Settlement aborted:')) {
      return res.json({
        success: false,
        errorReason: error.message.replace('Settlement aborted: ', ''),
        network: req.body?.paymentPayload?.accepted?.network ?? network,
        transaction: '',
      });
    }
    res.status(500).json({ error: error instanceof Error ? error.message : 'Unknown error' });
  }
});

app.get('/supported', (_req, res) => {
  try {
    res.json(facilitator.getSupported());
  } catch (error) {
    res.status(500).json({ error: error instanceof Error ? error.message : 'Unknown error' });
  }
});

const server = app.listen(port, args.host, (error) => {
  if (error) {
    console.error(`reference facilitator: cannot listen on ${args.host}:${port}: ${error.message}`);
    process.exit(1);
  }
  console.log(`reference facilitator listening on http://${args.host}:${port} (${network}, signer ${account.address})`);
});

const shutdown = () => server.close(() => process.exit(0));
process.once('SIGTERM', shutdown);
process.once('SIGINT', shutdown);
