// Deploys the local test contracts to a fresh anvil, funds the payers and returns the chain manifest
// (shape: libs/chain/src/manifest.ts).
import { pbkdf2Sync } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { createPublicClient, createWalletClient, defineChain, getContractAddress, http, toHex } from 'viem';
import { HDKey, privateKeyToAccount } from 'viem/accounts';
import { TEST_MNEMONIC } from './anvil.mjs';
import { compileContracts } from './contracts.mjs';
import { assertCodeAt, deployPermit2 } from './deploy-permit2.mjs';
import { deploySessionEscrow } from './deploy-session-escrow.mjs';
import { deployBatchSettlement } from './deploy-batch-settlement.mjs';

export const MULTICALL3_ADDRESS = '0xcA11bde05977b3631167028862bE2a173976CA11';
export const MINT_AMOUNT = 1_000_000n * 10n ** 6n; // 1,000,000 tokens with 6 decimals
export const SMART_WALLET_SALT = `0x${'00'.repeat(32)}`;

/** Account roles by mnemonic index. */
export const ACCOUNT_LAYOUT = Object.freeze({ deployer: 0, facilitatorSigners: [1, 2, 3, 4], merchant: 5, payers: [6, 15] });

/**
 * Derive `count` accounts (m/44'/60'/0'/0/i) from the mnemonic. Node's native PBKDF2 + one shared parent key:
 * ~60 ms for 16 accounts, against ~250 ms for 16 mnemonicToAccount calls.
 * @returns {{ address: `0x${string}`, privateKey: `0x${string}` }[]}
 */
export function deriveAccounts(count, mnemonic = TEST_MNEMONIC) {
  const seed = pbkdf2Sync(mnemonic.normalize('NFKD'), 'mnemonic', 2048, 64, 'sha512');
  const parent = HDKey.fromMasterSeed(seed).derive("m/44'/60'/0'/0");
  return Array.from({ length: count }, (_, i) => {
    const privateKey = toHex(parent.deriveChild(i).privateKey);
    return { address: privateKeyToAccount(privateKey).address, privateKey };
  });
}

/**
 * @param {{ rpcUrl: string, mnemonic?: string, log?: (msg: string) => void }} opts
 * @returns {Promise<import('../../libs/chain/src/manifest.js').ChainManifest>}
 */
export async function deployLocalChain({ rpcUrl, mnemonic = TEST_MNEMONIC, log = () => {} }) {
  const t0 = performance.now();
  const { artifacts, cached, ms: compileMs } = compileContracts({ log });
  log(`contracts ${cached ? 'loaded from cache' : 'compiled'} in ${Math.round(compileMs)} ms`);

  const keys = deriveAccounts(16, mnemonic);
  const [deployerKey] = keys;
  const deployer = privateKeyToAccount(deployerKey.privateKey);

  const bootstrap = createPublicClient({ transport: http(rpcUrl) });
  const chainId = await bootstrap.getChainId();
  const chain = defineChain({
    id: chainId,
    name: `Local Anvil ${chainId}`,
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
  });
  const publicClient = createPublicClient({ chain, transport: http(rpcUrl), pollingInterval: 50 });
  const wallet = createWalletClient({ account: deployer, chain, transport: http(rpcUrl), pollingInterval: 50 });

  // Fixed fee + explicit nonces: no per-transaction fee/nonce round trips, and transactions can be sent
  // back to back (anvil automines each one; with --block-time they all land in the next block).
  const fees = await publicClient.estimateFeesPerGas();
  const txFees = { maxFeePerGas: fees.maxFeePerGas * 2n, maxPriorityFeePerGas: fees.maxPriorityFeePerGas };
  let nonce = await publicClient.getTransactionCount({ address: deployer.address, blockTag: 'pending' });

  const waitAll = async (hashes) => {
    const receipts = await Promise.all(hashes.map((hash) => publicClient.waitForTransactionReceipt({ hash, pollingInterval: 50, timeout: 30_000 })));
    const failed = receipts.find((r) => r.status !== 'success');
    if (failed) throw new Error(`deploy transaction ${failed.transactionHash} reverted`);
    return receipts;
  };

  // 1. Contracts (addresses follow from the deployer nonce).
  const deployOrder = ['MockUSDC', 'MisreportingUSDC', 'PlainToken', 'Multicall3', 'SmartWalletFactory'];
  const addresses = {};
  const deployHashes = [];
  for (const name of deployOrder) {
    const txNonce = nonce++;
    addresses[name] = getContractAddress({ from: deployer.address, nonce: BigInt(txNonce) });
    deployHashes.push(
      await wallet.deployContract({
        abi: artifacts[name].abi,
        bytecode: artifacts[name].bytecode,
        nonce: txNonce,
        gas: 5_000_000n,
        ...txFees,
      }),
    );
  }
  await waitAll(deployHashes);

  // 2. Multicall3's runtime code at the canonical address (viem multicall, x402 facilitator).
  const multicallCode = await publicClient.getCode({ address: addresses.Multicall3 });
  if (!multicallCode || multicallCode === '0x') throw new Error('Multicall3 deployment left no code');
  await publicClient.request({ method: 'anvil_setCode', params: [MULTICALL3_ADDRESS, multicallCode] });

  // 2b. x402 batch-settlement and its ERC-3009 deposit collector at the addresses @x402/evm hard-codes.
  const batchSettlement = await deployBatchSettlement({ publicClient, wallet, artifacts, nextNonce: () => nonce++, txFees });

  // 3. One SmartWallet (ERC-1271) owned by payer #0, through the CREATE2 factory.
  const payers = keys.slice(ACCOUNT_LAYOUT.payers[0], ACCOUNT_LAYOUT.payers[1] + 1);
  const walletOwner = payers[0];
  const factory = { address: addresses.SmartWalletFactory, abi: artifacts.SmartWalletFactory.abi };
  const smartWallet = await publicClient.readContract({
    ...factory,
    functionName: 'predict',
    args: [walletOwner.address, SMART_WALLET_SALT],
  });
  await waitAll([
    await wallet.writeContract({
      ...factory,
      functionName: 'deploy',
      args: [walletOwner.address, SMART_WALLET_SALT],
      nonce: nonce++,
      gas: 1_000_000n,
      ...txFees,
    }),
  ]);

  // 4. Mint 1,000,000 of each token to every payer and to the SmartWallet.
  const recipients = [...payers.map((p) => p.address), smartWallet];
  const mintHashes = [];
  for (const token of ['MockUSDC', 'MisreportingUSDC', 'PlainToken']) {
    for (const to of recipients) {
      mintHashes.push(
        await wallet.writeContract({
          address: addresses[token],
          abi: artifacts[token].abi,
          functionName: 'mint',
          args: [to, MINT_AMOUNT],
          nonce: nonce++,
          gas: 200_000n,
          ...txFees,
        }),
      );
    }
  }
  await waitAll(mintHashes);

  // 5. Permit2 and the x402 upto proxy at their canonical addresses; payers approve Permit2 (deploy-permit2.mjs).
  const permit2Contracts = await deployPermit2({
    publicClient,
    wallet,
    artifacts,
    nextNonce: () => nonce++,
    txFees,
    waitAll,
    deployer: deployer.address,
    payers,
    smartWallet,
    tokens: [addresses.MockUSDC, addresses.MisreportingUSDC, addresses.PlainToken],
  });
  await assertCodeAt(publicClient, { multicall3: MULTICALL3_ADDRESS, ...permit2Contracts });
  const sessionEscrow = await deploySessionEscrow({ wallet, publicClient, artifact: artifacts.EvmPaymentChannelEscrow, nonce: nonce++, txFees });

  log(`deployed and funded in ${Math.round(performance.now() - t0)} ms`);

  const usdcMeta = { name: 'USD Coin', version: '2', decimals: 6, symbol: 'USDC' };
  return {
    rpcUrl,
    chainId,
    network: `eip155:${chainId}`,
    tokens: {
      usdc: { address: addresses.MockUSDC, ...usdcMeta },
      misreportingUsdc: { address: addresses.MisreportingUSDC, ...usdcMeta },
      plain: { address: addresses.PlainToken, name: 'Plain Token', version: '1', decimals: 6, symbol: 'PLN' },
    },
    contracts: {
      multicall3: MULTICALL3_ADDRESS,
      smartWallet,
      smartWalletFactory: addresses.SmartWalletFactory,
      ...permit2Contracts,
      sessionEscrow,
      batchSettlement: batchSettlement.batchSettlement,
      erc3009DepositCollector: batchSettlement.erc3009DepositCollector,
    },
    accounts: {
      deployer: keys[ACCOUNT_LAYOUT.deployer],
      facilitatorSigners: ACCOUNT_LAYOUT.facilitatorSigners.map((i) => keys[i]),
      merchant: keys[ACCOUNT_LAYOUT.merchant],
      payers,
      smartWalletOwner: walletOwner,
    },
    deployedAt: new Date().toISOString(),
  };
}

/** Write the manifest as pretty JSON (mkdir -p, atomic rename). Returns the absolute path. */
export function writeManifest(file, manifest) {
  const abs = path.resolve(file);
  fs.mkdirSync(path.dirname(abs), { recursive: true });
  const tmp = `${abs}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, `${JSON.stringify(manifest, null, 2)}\n`);
  fs.renameSync(tmp, abs);
  return abs;
}
