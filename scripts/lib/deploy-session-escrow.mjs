// Deploys the MPP session escrow (contracts/EvmPaymentChannelEscrow.sol) for scripts/lib/deploy.mjs: one contract,
// no constructor arguments, its address derived from the deployer's nonce so the caller can keep sending back to back.
import { getContractAddress } from 'viem';

/**
 * Sends the deployment with the given nonce and waits for its receipt.
 * @param {{ wallet: import('viem').WalletClient, publicClient: import('viem').PublicClient, artifact: { abi: readonly unknown[], bytecode: `0x${string}` }, nonce: number, txFees: { maxFeePerGas: bigint, maxPriorityFeePerGas: bigint } }} opts
 * @returns {Promise<`0x${string}`>} the escrow's address
 */
export async function deploySessionEscrow({ wallet, publicClient, artifact, nonce, txFees }) {
  const address = getContractAddress({ from: wallet.account.address, nonce: BigInt(nonce) });
  const hash = await wallet.deployContract({ abi: artifact.abi, bytecode: artifact.bytecode, nonce, gas: 3_000_000n, ...txFees });
  const receipt = await publicClient.waitForTransactionReceipt({ hash, pollingInterval: 50, timeout: 30_000 });
  if (receipt.status !== 'success') throw new Error(`session escrow deployment ${hash} reverted`);
  if (receipt.contractAddress?.toLowerCase() !== address.toLowerCase())
    throw new Error(`session escrow landed at ${receipt.contractAddress}, expected ${address}`);
  return address;
}
