// Places our x402 batch-settlement contracts at the addresses the official @x402/evm client, server and facilitator
// hard-code (no option overrides them): deploy each one normally with the canonical addresses as constructor
// arguments (so the immutables are right), then copy the runtime code with anvil_setCode. anvil_setCode copies no
// storage, which is why the contracts keep their configuration in immutables and constants only.

/** The canonical addresses of @x402/evm 2.27 (dist/cjs/batch-settlement/{client,facilitator,server}/index.js). */
export const BATCH_SETTLEMENT_ADDRESS = '0x4020074e9dF2ce1deE5A9C1b5c3f541D02a10003';
export const ERC3009_DEPOSIT_COLLECTOR_ADDRESS = '0x4020806089470a89826cB9fB1f4059150b550004';
/** Not deployed yet: the Permit2 collector needs Permit2 on the chain (see docs). */
export const PERMIT2_DEPOSIT_COLLECTOR_ADDRESS = '0x4020425FAf3B746C082C2f942b4E5159887B0005';

/**
 * @param {{ publicClient: import('viem').PublicClient, wallet: import('viem').WalletClient, artifacts: Record<string, { abi: any[], bytecode: `0x${string}` }>, nextNonce: () => number, txFees: object }} ctx
 * @returns {Promise<{ batchSettlement: `0x${string}`, erc3009DepositCollector: `0x${string}` }>}
 */
export async function deployBatchSettlement({ publicClient, wallet, artifacts, nextNonce, txFees }) {
  const placements = [
    { name: 'X402BatchSettlement', at: BATCH_SETTLEMENT_ADDRESS, args: [] },
    { name: 'ERC3009DepositCollector', at: ERC3009_DEPOSIT_COLLECTOR_ADDRESS, args: [BATCH_SETTLEMENT_ADDRESS] },
  ];
  const hashes = [];
  for (const { name, args } of placements) {
    hashes.push(
      await wallet.deployContract({ abi: artifacts[name].abi, bytecode: artifacts[name].bytecode, args, nonce: nextNonce(), gas: 6_000_000n, ...txFees }),
    );
  }
  const receipts = await Promise.all(hashes.map((hash) => publicClient.waitForTransactionReceipt({ hash, pollingInterval: 50, timeout: 30_000 })));
  for (const [i, receipt] of receipts.entries()) {
    const { name, at } = placements[i];
    if (receipt.status !== 'success' || !receipt.contractAddress) throw new Error(`deploying ${name} failed (${receipt.transactionHash})`);
    const code = await publicClient.getCode({ address: receipt.contractAddress });
    if (!code || code === '0x') throw new Error(`${name} deployment left no code`);
    await publicClient.request({ method: 'anvil_setCode', params: [at, code] });
    const placed = await publicClient.getCode({ address: at });
    if (placed?.toLowerCase() !== code.toLowerCase()) throw new Error(`anvil_setCode did not place ${name} at ${at}`);
  }
  return { batchSettlement: BATCH_SETTLEMENT_ADDRESS, erc3009DepositCollector: ERC3009_DEPOSIT_COLLECTOR_ADDRESS };
}
