#!/usr/bin/env node
// Gas of one exact-EVM settlement per kind of payer, on a fresh local chain: an EOA (transferWithAuthorization with
// v, r, s), a deployed ERC-1271 wallet (the `bytes signature` overload), and a counterfactual ERC-6492 wallet (one
// Multicall3 aggregate3 of the factory's deploy call and the transfer, the transaction the facilitator sends for such a
// payer; see counterfactualCalldata in apps/facilitator/src/x402/exact-evm/exact-evm.scheme.ts).
//
//   node bench/smart-wallet-gas.mjs [--port 8550]
//
// A measurement, not a test: it prints the figures and exits 0; non-zero only when the harness fails. It starts its
// own anvil (8550 by default: 8545 is the dev chain, 8546 the tests', 8547 and 8549 the other benchmarks) and stops it.
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { createPublicClient, createWalletClient, defineChain, encodeFunctionData, http, parseAbi, parseSignature } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { startAnvil } from '../scripts/lib/anvil.mjs';
import { deployLocalChain } from '../scripts/lib/deploy.mjs';

const { values: args } = parseArgs({ options: { port: { type: 'string', default: '8550' } } });

const usdcAbi = parseAbi([
  'function transfer(address to, uint256 value) returns (bool)',
  'function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, uint8 v, bytes32 r, bytes32 s)',
  'function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, bytes signature)',
]);
const factoryAbi = parseAbi([
  'function deploy(address owner, bytes32 salt) returns (address)',
  'function predict(address owner, bytes32 salt) view returns (address)',
]);
const multicall3Abi = parseAbi([
  'struct Call3 { address target; bool allowFailure; bytes callData; }',
  'struct Result { bool success; bytes returnData; }',
  'function aggregate3(Call3[] calls) payable returns (Result[] returnData)',
]);
const eip3009Types = {
  TransferWithAuthorization: [
    { name: 'from', type: 'address' },
    { name: 'to', type: 'address' },
    { name: 'value', type: 'uint256' },
    { name: 'validAfter', type: 'uint256' },
    { name: 'validBefore', type: 'uint256' },
    { name: 'nonce', type: 'bytes32' },
  ],
};

const anvil = await startAnvil({ port: Number(args.port) });
try {
  const manifest = await deployLocalChain({ rpcUrl: anvil.rpcUrl });
  const chain = defineChain({
    id: manifest.chainId,
    name: 'anvil',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [manifest.rpcUrl] } },
  });
  const client = createPublicClient({ chain, transport: http(manifest.rpcUrl) });
  const walletOf = (key) => createWalletClient({ account: privateKeyToAccount(key), chain, transport: http(manifest.rpcUrl) });
  const settler = walletOf(manifest.accounts.facilitatorSigners[0].privateKey);
  const usdc = manifest.tokens.usdc;
  const merchant = manifest.accounts.merchant.address;
  const value = 10_000n;

  const sign = (signer, from) => {
    const message = {
      from,
      to: merchant,
      value,
      validAfter: 0n,
      validBefore: BigInt(Math.floor(Date.now() / 1000) + 600),
      nonce: `0x${randomBytes(32).toString('hex')}`,
    };
    const domain = { name: usdc.name, version: usdc.version, chainId: manifest.chainId, verifyingContract: usdc.address };
    return signer
      .signTypedData({ domain, types: eip3009Types, primaryType: 'TransferWithAuthorization', message })
      .then((signature) => ({ message, signature }));
  };
  const authorizationArgs = ({ message: m }) => [m.from, m.to, m.value, m.validAfter, m.validBefore, m.nonce];
  const gasOf = async (request) => {
    const receipt = await client.waitForTransactionReceipt({ hash: await settler.sendTransaction(request), pollingInterval: 25 });
    if (receipt.status !== 'success') throw new Error(`the ${request.label} settlement reverted`);
    return receipt.gasUsed;
  };

  // The merchant holds some USDC already, so no measurement pays for its balance slot going from zero.
  const warmUp = await walletOf(manifest.accounts.payers[3].privateKey).writeContract({
    address: usdc.address,
    abi: usdcAbi,
    functionName: 'transfer',
    args: [merchant, 1n],
  });
  await client.waitForTransactionReceipt({ hash: warmUp, pollingInterval: 25 });

  // EOA payer: the (v, r, s) overload.
  const payer = privateKeyToAccount(manifest.accounts.payers[1].privateKey);
  const eoa = await sign(payer, payer.address);
  const { v, r, s } = parseSignature(eoa.signature);
  const eoaGas = await gasOf({
    label: 'EOA',
    to: usdc.address,
    data: encodeFunctionData({ abi: usdcAbi, functionName: 'transferWithAuthorization', args: [...authorizationArgs(eoa), Number(v), r, s] }),
  });

  // Deployed ERC-1271 wallet: the bytes overload, checked by the wallet's isValidSignature.
  const owner = privateKeyToAccount(manifest.accounts.smartWalletOwner.privateKey);
  const deployed = await sign(owner, manifest.contracts.smartWallet);
  const deployedGas = await gasOf({
    label: 'ERC-1271',
    to: usdc.address,
    data: encodeFunctionData({ abi: usdcAbi, functionName: 'transferWithAuthorization', args: [...authorizationArgs(deployed), deployed.signature] }),
  });

  // Counterfactual ERC-6492 wallet of a fresh owner, funded at its predicted address: deploy + transfer in one transaction.
  const newOwner = privateKeyToAccount(generatePrivateKey());
  const salt = `0x${randomBytes(32).toString('hex')}`;
  const factory = manifest.contracts.smartWalletFactory;
  const predicted = await client.readContract({ address: factory, abi: factoryAbi, functionName: 'predict', args: [newOwner.address, salt] });
  const funding = await walletOf(manifest.accounts.payers[2].privateKey).writeContract({
    address: usdc.address,
    abi: usdcAbi,
    functionName: 'transfer',
    args: [predicted, value],
  });
  await client.waitForTransactionReceipt({ hash: funding, pollingInterval: 25 });
  const counterfactual = await sign(newOwner, predicted);
  const calls = [
    { target: factory, allowFailure: true, callData: encodeFunctionData({ abi: factoryAbi, functionName: 'deploy', args: [newOwner.address, salt] }) },
    {
      target: usdc.address,
      allowFailure: false,
      callData: encodeFunctionData({
        abi: usdcAbi,
        functionName: 'transferWithAuthorization',
        args: [...authorizationArgs(counterfactual), counterfactual.signature],
      }),
    },
  ];
  const counterfactualGas = await gasOf({
    label: 'ERC-6492',
    to: manifest.contracts.multicall3,
    data: encodeFunctionData({ abi: multicall3Abi, functionName: 'aggregate3', args: [calls] }),
  });

  console.log('gas used by one exact-EVM settlement, by payer (fresh anvil: the first payment of each payer, to a merchant that already holds USDC)');
  console.table([
    { payer: 'EOA (v, r, s)', gasUsed: Number(eoaGas) },
    { payer: 'ERC-1271 wallet, deployed', gasUsed: Number(deployedGas) },
    { payer: 'ERC-6492 wallet, deployed in the same transaction (Multicall3)', gasUsed: Number(counterfactualGas) },
  ]);
} finally {
  await anvil.stop();
}
