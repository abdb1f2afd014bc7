// Places our Permit2 (SignatureTransfer) and the x402 upto Permit2 proxy at their canonical addresses on a local
// anvil, and gives the test payers a Permit2 allowance. Called by deployLocalChain (deploy.mjs).
//
// Canonical addresses are what the official @x402/evm clients hard-code (no option overrides them), so the contracts
// are deployed anywhere, then their runtime code is copied with anvil_setCode. anvil_setCode copies no storage: both
// contracts keep their configuration in immutables (the proxy's PERMIT2, passed the canonical address) and Permit2
// computes its EIP-712 domain from address(this) on every call.
import { getContractAddress, maxUint256 } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';

export const PERMIT2_ADDRESS = '0x000000000022D473030F116dDEE9F6B43aC78BA3';
export const X402_UPTO_PERMIT2_PROXY_ADDRESS = '0x4020A4f3b7b90ccA423B9fabCc0CE57C6C240002';

const approveAbi = [
  {
    type: 'function',
    name: 'approve',
    stateMutability: 'nonpayable',
    inputs: [
      { name: 'spender', type: 'address' },
      { name: 'amount', type: 'uint256' },
    ],
    outputs: [{ type: 'bool' }],
  },
];

/**
 * @param {{
 *   publicClient: import('viem').PublicClient,
 *   wallet: import('viem').WalletClient,
 *   artifacts: Record<string, { abi: any[], bytecode: `0x${string}` }>,
 *   nextNonce: () => number,
 *   txFees: { maxFeePerGas: bigint, maxPriorityFeePerGas: bigint },
 *   waitAll: (hashes: `0x${string}`[]) => Promise<unknown>,
 *   deployer: `0x${string}`,
 *   payers: { address: `0x${string}`, privateKey: `0x${string}` }[],
 *   smartWallet: `0x${string}`,
 *   tokens: `0x${string}`[],
 * }} opts
 * @returns {Promise<{ permit2: `0x${string}`, x402UptoPermit2Proxy: `0x${string}` }>}
 */
export async function deployPermit2({ publicClient, wallet, artifacts, nextNonce, txFees, waitAll, deployer, payers, smartWallet, tokens }) {
  // 1. Deploy both anywhere; the proxy is built against the canonical Permit2 address (an immutable).
  const placed = [];
  for (const [name, args] of [
    ['Permit2', []],
    ['X402UptoPermit2Proxy', [PERMIT2_ADDRESS]],
  ]) {
    const nonce = nextNonce();
    placed.push({ name, address: getContractAddress({ from: deployer, nonce: BigInt(nonce) }) });
    const hash = await wallet.deployContract({ abi: artifacts[name].abi, bytecode: artifacts[name].bytecode, args, nonce, gas: 3_000_000n, ...txFees });
    await waitAll([hash]);
  }

  // 2. Their runtime code at the canonical addresses.
  const canonical = { Permit2: PERMIT2_ADDRESS, X402UptoPermit2Proxy: X402_UPTO_PERMIT2_PROXY_ADDRESS };
  for (const { name, address } of placed) {
    const code = await publicClient.getCode({ address });
    if (!code || code === '0x') throw new Error(`${name} deployment left no code`);
    await publicClient.request({ method: 'anvil_setCode', params: [canonical[name], code] });
  }

  // 3. Every payer (and the ERC-1271 SmartWallet, impersonated) approves Permit2 for the maximum on every token:
  //    the one-time approval a Permit2 payer makes, so tests can sign upto permits straight away.
  const approvals = [];
  for (const payer of payers) {
    const account = privateKeyToAccount(payer.privateKey);
    let nonce = await publicClient.getTransactionCount({ address: account.address, blockTag: 'pending' });
    for (const token of tokens) {
      approvals.push(
        await wallet.writeContract({
          account,
          address: token,
          abi: approveAbi,
          functionName: 'approve',
          args: [PERMIT2_ADDRESS, maxUint256],
          nonce: nonce++,
          gas: 100_000n,
          ...txFees,
        }),
      );
    }
  }
  await publicClient.request({ method: 'anvil_setBalance', params: [smartWallet, '0xde0b6b3a7640000'] });
  await publicClient.request({ method: 'anvil_impersonateAccount', params: [smartWallet] });
  try {
    let nonce = await publicClient.getTransactionCount({ address: smartWallet, blockTag: 'pending' });
    for (const token of tokens) {
      approvals.push(
        await wallet.writeContract({
          account: smartWallet,
          address: token,
          abi: approveAbi,
          functionName: 'approve',
          args: [PERMIT2_ADDRESS, maxUint256],
          nonce: nonce++,
          gas: 100_000n,
          ...txFees,
        }),
      );
    }
    await waitAll(approvals);
  } finally {
    await publicClient.request({ method: 'anvil_stopImpersonatingAccount', params: [smartWallet] });
  }
  return { permit2: PERMIT2_ADDRESS, x402UptoPermit2Proxy: X402_UPTO_PERMIT2_PROXY_ADDRESS };
}

/** eth_call to an empty address succeeds: a chain fixture must show there is code wherever a canonical address is used. */
export async function assertCodeAt(publicClient, addresses) {
  for (const [name, address] of Object.entries(addresses)) {
    const code = await publicClient.getCode({ address });
    if (!code || code === '0x') throw new Error(`no contract code at ${name} (${address})`);
  }
}
