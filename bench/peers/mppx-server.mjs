#!/usr/bin/env node
// The MPP peer for bench/paid-requests.mjs: mppx 0.11's own server (mppx/express: Mppx.create + its `evm` charge method,
// EIP-3009 `authorization` credentials) selling POST /forecast for the same price as our merchant agent's
// POST /mpp/forecast, so that mppx's client (buyWithMpp) pays both unchanged.
//
// The evm charge needs a settler (mppx ships none that sends transactions itself):
//   --settle direct     (default) the settle hook mppx documents for custom settlement: one funded key from the chain
//                       manifest sends transferWithAuthorization on the same anvil with viem (defaults everywhere) and
//                       waits for its receipt; the reference is the transaction hash.
//   --settle facilitator  mppx's built-in x402 path (`x402.facilitator`): verify then settle through an x402
//                       facilitator (the reference one, bench/reference-facilitator.mjs).
//
// Usage:
//   node bench/peers/mppx-server.mjs --port 9805 --rpc-url http://127.0.0.1:9801 --chain-id 31337 --asset 0x… \
//     --asset-name USDC --asset-version 2 --decimals 6 --pay-to 0x… --price 10000 --private-key 0x…
//     [--settle direct|facilitator --facilitator-url http://127.0.0.1:9803]
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import express from 'express';
import { Mppx, evm } from 'mppx/express';
import { createWalletClient, defineChain, http, parseAbi, publicActions } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';

const { values: args } = parseArgs({
  options: {
    port: { type: 'string', default: '9805' },
    host: { type: 'string', default: '127.0.0.1' },
    'rpc-url': { type: 'string' },
    'chain-id': { type: 'string' },
    asset: { type: 'string' },
    'asset-name': { type: 'string', default: 'USDC' },
    'asset-version': { type: 'string', default: '2' },
    decimals: { type: 'string', default: '6' },
    'pay-to': { type: 'string' },
    price: { type: 'string', default: '10000' },
    'private-key': { type: 'string' },
    settle: { type: 'string', default: 'direct' },
    'facilitator-url': { type: 'string' },
  },
});
for (const required of ['rpc-url', 'chain-id', 'asset', 'pay-to']) {
  if (!args[required]) {
    console.error(`mppx peer: --${required} is required`);
    process.exit(2);
  }
}
if (args.settle === 'direct' && !/^0x[0-9a-fA-F]{64}$/.test(args['private-key'] ?? '')) {
  console.error('mppx peer: --settle direct needs --private-key');
  process.exit(2);
}
if (args.settle === 'facilitator' && !args['facilitator-url']) {
  console.error('mppx peer: --settle facilitator needs --facilitator-url');
  process.exit(2);
}
const chainId = Number(args['chain-id']);
const decimals = Number(args.decimals);
const port = Number(args.port);

const eip3009Abi = parseAbi([
  'function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, bytes signature)',
]);

/** mppx's settle hook: the authorization sent on chain by this server's own key, the receipt waited for. */
function directSettler() {
  const chain = defineChain({
    id: chainId,
    name: `Local ${chainId}`,
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [args['rpc-url']] } },
  });
  const wallet = createWalletClient({ account: privateKeyToAccount(args['private-key']), chain, transport: http(args['rpc-url']) }).extend(publicActions);
  return async ({ payload, request }) => {
    const hash = await wallet.writeContract({
      address: request.currency,
      abi: eip3009Abi,
      functionName: 'transferWithAuthorization',
      args: [payload.from, payload.to, BigInt(payload.value), BigInt(payload.validAfter), BigInt(payload.validBefore), payload.nonce, payload.signature],
    });
    const receipt = await wallet.waitForTransactionReceipt({ hash });
    if (receipt.status !== 'success') throw new Error(`transferWithAuthorization reverted in ${hash}`);
    return { reference: hash };
  };
}

const charge = evm.charge({
  currency: args.asset,
  recipient: args['pay-to'],
  chainId,
  decimals,
  authorization: { name: args['asset-name'], version: args['asset-version'] },
  ...(args.settle === 'direct' ? { settle: directSettler() } : { x402: { facilitator: args['facilitator-url'] } }),
});
const mppx = Mppx.create({ methods: [charge], secretKey: randomBytes(32).toString('base64'), realm: 'mppx-peer.local' });

// The route takes display units; the price is in atomic units, as our merchant's MERCHANT_PRICE.
const amount = (Number(args.price) / 10 ** decimals).toFixed(decimals).replace(/\.?0+$/, '');

const app = express();
app.use(express.json());
app.post('/forecast', mppx.charge({ amount, description: 'forecast' }), (req, res) => {
  const city = typeof req.body?.city === 'string' ? req.body.city : 'Lisbon';
  res.json({ location: city, hours: [0, 1, 2].map((h) => ({ hour: h, temperatureC: 18 + h, condition: 'clear' })) });
});
app.get('/health', (_req, res) => res.json({ ok: true }));

const server = app.listen(port, args.host, (error) => {
  if (error) {
    console.error(`mppx peer: cannot listen on ${args.host}:${port}: ${error.message}`);
    process.exit(1);
  }
  console.log(`mppx peer on http://${args.host}:${port} (evm charge of ${amount}, settle ${args.settle})`);
});
const shutdown = () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
};
process.once('SIGTERM', shutdown);
process.once('SIGINT', shutdown);
