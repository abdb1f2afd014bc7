#!/usr/bin/env node
// Gas per paid call: x402 `batch-settlement` against one `exact` settlement per call, on a fresh local chain.
// batch-settlement: one deposit through the ERC-3009 collector covering every call, one payer-signed cumulative voucher
// per call (off chain, no gas), then one claimWithSignature of the last voucher and one settle to the receiver — the
// transactions our facilitator sends for them. exact: one transferWithAuthorization per call, as the settlement engine
// sends a single one. Both pay the same merchant the same price per call.
//
//   node bench/batch-settlement-gas.mjs [--calls 100] [--price 1000] [--port 8551]
//
// A measurement, not a test: it prints the figures and exits 0; non-zero only when the harness fails. It starts its
// own anvil (8551 by default: 8545 is the dev chain, 8546 the tests', 8547–8550 the other benchmarks) and stops it.
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import {
  createPublicClient,
  createWalletClient,
  defineChain,
  encodeAbiParameters,
  hashTypedData,
  http,
  keccak256,
  parseAbi,
  parseSignature,
  toHex,
  zeroAddress,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { startAnvil } from '../scripts/lib/anvil.mjs';
import { deployLocalChain, deriveAccounts } from '../scripts/lib/deploy.mjs';
import { BATCH_SETTLEMENT_ADDRESS, ERC3009_DEPOSIT_COLLECTOR_ADDRESS } from '../scripts/lib/deploy-batch-settlement.mjs';

const { values: args } = parseArgs({
  options: { calls: { type: 'string', default: '100' }, price: { type: 'string', default: '1000' }, port: { type: 'string', default: '8551' } },
});
const CALLS = Number(args.calls);
const PRICE = BigInt(args.price);

const settlementAbi = parseAbi([
  'struct ChannelConfig { address payer; address payerAuthorizer; address receiver; address receiverAuthorizer; address token; uint40 withdrawDelay; bytes32 salt; }',
  'struct Voucher { ChannelConfig channel; uint128 maxClaimableAmount; }',
  'struct VoucherClaim { Voucher voucher; bytes signature; uint128 totalClaimed; }',
  'function deposit(ChannelConfig config, uint128 amount, address collector, bytes collectorData)',
  'function claimWithSignature(VoucherClaim[] voucherClaims, bytes authorizerSignature)',
  'function settle(address receiver, address token)',
]);
const usdcAbi = parseAbi([
  'function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, uint8 v, bytes32 r, bytes32 s)',
]);
const authorizationFields = [
  { name: 'from', type: 'address' },
  { name: 'to', type: 'address' },
  { name: 'value', type: 'uint256' },
  { name: 'validAfter', type: 'uint256' },
  { name: 'validBefore', type: 'uint256' },
  { name: 'nonce', type: 'bytes32' },
];

const anvil = await startAnvil({ port: Number(args.port) });
try {
  const manifest = await deployLocalChain({ rpcUrl: anvil.rpcUrl });
  const chainId = manifest.chainId;
  const chain = defineChain({
    id: chainId,
    name: 'anvil',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [anvil.rpcUrl] } },
  });
  const client = createPublicClient({ chain, transport: http(anvil.rpcUrl), pollingInterval: 50 });
  const [senderKey, authorizerKey] = deriveAccounts(18).slice(16);
  const sender = createWalletClient({ account: privateKeyToAccount(senderKey.privateKey), chain, transport: http(anvil.rpcUrl), pollingInterval: 50 });
  const authorizer = privateKeyToAccount(authorizerKey.privateKey);
  const payer = privateKeyToAccount(manifest.accounts.payers[0].privateKey);
  const usdc = manifest.tokens.usdc;
  const merchant = manifest.accounts.merchant.address;
  const tokenDomain = { name: usdc.name, version: usdc.version, chainId, verifyingContract: usdc.address };
  const settlementDomain = { name: 'x402 Batch Settlement', version: '1', chainId, verifyingContract: BATCH_SETTLEMENT_ADDRESS };
  const gasOf = async (hash) => {
    const receipt = await client.waitForTransactionReceipt({ hash, pollingInterval: 50 });
    if (receipt.status !== 'success') throw new Error(`transaction ${hash} reverted`);
    return receipt.gasUsed;
  };

  // ---- batch-settlement
  const config = {
    payer: payer.address,
    payerAuthorizer: zeroAddress,
    receiver: merchant,
    receiverAuthorizer: authorizer.address,
    token: usdc.address,
    withdrawDelay: 900,
    salt: toHex(randomBytes(32)),
  };
  const channelId = hashTypedData({
    domain: settlementDomain,
    types: {
      ChannelConfig: [
        { name: 'payer', type: 'address' },
        { name: 'payerAuthorizer', type: 'address' },
        { name: 'receiver', type: 'address' },
        { name: 'receiverAuthorizer', type: 'address' },
        { name: 'token', type: 'address' },
        { name: 'withdrawDelay', type: 'uint40' },
        { name: 'salt', type: 'bytes32' },
      ],
    },
    primaryType: 'ChannelConfig',
    message: config,
  });
  const total = PRICE * BigInt(CALLS);
  const depositSalt = BigInt(toHex(randomBytes(32)));
  const validBefore = BigInt(Math.floor(Date.now() / 1000) + 3600);
  const depositSignature = await payer.signTypedData({
    domain: tokenDomain,
    types: { ReceiveWithAuthorization: authorizationFields },
    primaryType: 'ReceiveWithAuthorization',
    message: {
      from: payer.address,
      to: ERC3009_DEPOSIT_COLLECTOR_ADDRESS,
      value: total,
      validAfter: 0n,
      validBefore,
      nonce: keccak256(encodeAbiParameters([{ type: 'bytes32' }, { type: 'uint256' }], [channelId, depositSalt])),
    },
  });
  const collectorData = encodeAbiParameters(
    [{ type: 'uint256' }, { type: 'uint256' }, { type: 'uint256' }, { type: 'bytes' }],
    [0n, validBefore, depositSalt, depositSignature],
  );
  const batchGas = { deposit: 0n, claim: 0n, settle: 0n };
  batchGas.deposit = await gasOf(
    await sender.writeContract({
      address: BATCH_SETTLEMENT_ADDRESS,
      abi: settlementAbi,
      functionName: 'deposit',
      args: [config, total, ERC3009_DEPOSIT_COLLECTOR_ADDRESS, collectorData],
    }),
  );
  // one cumulative voucher per call; the server keeps the last one
  let lastVoucher;
  for (let call = 1; call <= CALLS; call++) {
    const maxClaimableAmount = PRICE * BigInt(call);
    lastVoucher = {
      maxClaimableAmount,
      signature: await payer.signTypedData({
        domain: settlementDomain,
        types: {
          Voucher: [
            { name: 'channelId', type: 'bytes32' },
            { name: 'maxClaimableAmount', type: 'uint128' },
          ],
        },
        primaryType: 'Voucher',
        message: { channelId, maxClaimableAmount },
      }),
    };
  }
  const claims = [{ voucher: { channel: config, maxClaimableAmount: lastVoucher.maxClaimableAmount }, signature: lastVoucher.signature, totalClaimed: total }];
  const claimSignature = await authorizer.signTypedData({
    domain: settlementDomain,
    types: {
      ClaimBatch: [{ name: 'claims', type: 'ClaimEntry[]' }],
      ClaimEntry: [
        { name: 'channelId', type: 'bytes32' },
        { name: 'maxClaimableAmount', type: 'uint128' },
        { name: 'totalClaimed', type: 'uint128' },
      ],
    },
    primaryType: 'ClaimBatch',
    message: { claims: [{ channelId, maxClaimableAmount: total, totalClaimed: total }] },
  });
  batchGas.claim = await gasOf(
    await sender.writeContract({ address: BATCH_SETTLEMENT_ADDRESS, abi: settlementAbi, functionName: 'claimWithSignature', args: [claims, claimSignature] }),
  );
  batchGas.settle = await gasOf(
    await sender.writeContract({ address: BATCH_SETTLEMENT_ADDRESS, abi: settlementAbi, functionName: 'settle', args: [merchant, usdc.address] }),
  );
  const batchTotal = batchGas.deposit + batchGas.claim + batchGas.settle;

  // ---- exact: one transferWithAuthorization per call
  let exactTotal = 0n;
  for (let call = 0; call < CALLS; call++) {
    const message = { from: payer.address, to: merchant, value: PRICE, validAfter: 0n, validBefore, nonce: toHex(randomBytes(32)) };
    const { v, r, s } = parseSignature(
      await payer.signTypedData({
        domain: tokenDomain,
        types: { TransferWithAuthorization: authorizationFields },
        primaryType: 'TransferWithAuthorization',
        message,
      }),
    );
    exactTotal += await gasOf(
      await sender.writeContract({
        address: usdc.address,
        abi: usdcAbi,
        functionName: 'transferWithAuthorization',
        args: [message.from, message.to, message.value, message.validAfter, message.validBefore, message.nonce, Number(v), r, s],
      }),
    );
  }

  const perCall = (gas) => (Number(gas) / CALLS).toFixed(0);
  console.log(`${CALLS} paid calls of ${PRICE} atomic units each, on anvil (chain ${chainId}):`);
  console.log(
    `  batch-settlement: ${batchTotal} gas in 3 transactions (deposit ${batchGas.deposit}, claimWithSignature ${batchGas.claim}, settle ${batchGas.settle}); ${CALLS} vouchers off chain`,
  );
  console.log(`  exact:            ${exactTotal} gas in ${CALLS} transactions`);
  console.log(
    `  gas per paid call: batch-settlement ${perCall(batchTotal)}, exact ${perCall(exactTotal)} (exact / batch-settlement = ${(Number(exactTotal) / Number(batchTotal)).toFixed(1)}×)`,
  );
} finally {
  await anvil.stop();
}
