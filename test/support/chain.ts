import { randomBytes } from 'node:crypto';
import { createPublicClient, defineChain, http, type Address, type Hex, type PublicClient } from 'viem';
import { privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { eip3009Abi, eip3009Types, loadChainManifest, type ChainManifest, type ManifestToken, type TransferWithAuthorizationMessage } from '@mp/chain';
import type { PaymentRequirementsV2 } from '@mp/x402';

/** The chain the e2e global setup deployed. */
export function testChain(): { manifest: ChainManifest; client: PublicClient } {
  const manifest = loadChainManifest(process.env.CHAIN_MANIFEST);
  const chain = defineChain({
    id: manifest.chainId,
    name: 'anvil',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [manifest.rpcUrl] } },
  });
  return { manifest, client: createPublicClient({ chain, transport: http(manifest.rpcUrl), pollingInterval: 50 }) };
}

export function payerAccount(manifest: ChainManifest, index: number): PrivateKeyAccount {
  return privateKeyToAccount(manifest.accounts.payers[index].privateKey as Hex);
}

export function randomNonce(): Hex {
  return `0x${randomBytes(32).toString('hex')}`;
}

/** The fields of an EIP-3009 authorization, as signed. */
export type AuthorizationFields = TransferWithAuthorizationMessage;

/** Signs an EIP-3009 authorization the way an x402 client does, with every field open to tests. */
export async function signAuthorization(
  signer: PrivateKeyAccount,
  token: ManifestToken,
  chainId: number,
  fields: Partial<AuthorizationFields> & { to: Address; value: bigint },
  domain: { name?: string; version?: string } = {},
) {
  const now = BigInt(Math.floor(Date.now() / 1000));
  const authorization: AuthorizationFields = {
    from: signer.address,
    validAfter: 0n,
    validBefore: now + 300n,
    nonce: randomNonce(),
    ...fields,
  };
  const signature = await signer.signTypedData({
    domain: { name: domain.name ?? token.name, version: domain.version ?? token.version, chainId, verifyingContract: token.address as Address },
    types: eip3009Types,
    primaryType: 'TransferWithAuthorization',
    message: authorization,
  });
  return {
    signature,
    authorization: {
      from: authorization.from,
      to: authorization.to,
      value: authorization.value.toString(),
      validAfter: authorization.validAfter.toString(),
      validBefore: authorization.validBefore.toString(),
      nonce: authorization.nonce,
    },
  };
}

export type ExactPayload = Awaited<ReturnType<typeof signAuthorization>>;

/** A v2 /verify or /settle body for a payload. */
export function v2Body(payload: ExactPayload, requirements: V2Requirements, extensions?: Record<string, unknown>) {
  return {
    x402Version: 2,
    paymentPayload: {
      x402Version: 2,
      resource: { url: 'http://merchant.test/weather', description: 'weather', mimeType: 'application/json' },
      accepted: requirements,
      payload,
      ...(extensions ? { extensions } : {}),
    },
    paymentRequirements: requirements,
  };
}

export type V2Requirements = PaymentRequirementsV2 & { extra: Record<string, unknown> };

export function v2Requirements(manifest: ChainManifest, token: ManifestToken, amount: bigint, overrides: Partial<V2Requirements> = {}): V2Requirements {
  return {
    scheme: 'exact',
    network: manifest.network,
    amount: amount.toString(),
    asset: token.address,
    payTo: manifest.accounts.merchant.address,
    maxTimeoutSeconds: 300,
    extra: { name: token.name, version: token.version },
    ...overrides,
  };
}

export async function balanceOf(client: PublicClient, token: ManifestToken, owner: Address): Promise<bigint> {
  return client.readContract({ address: token.address as Address, abi: eip3009Abi, functionName: 'balanceOf', args: [owner] });
}

/** Runs `fn` with anvil's automining off, so transactions wait in the mempool until `evm_mine`. */
export async function withAutomineOff<T>(client: PublicClient, fn: () => Promise<T>): Promise<T> {
  await client.request({ method: 'evm_setAutomine' as never, params: [false] as never });
  try {
    return await fn();
  } finally {
    await client.request({ method: 'evm_setAutomine' as never, params: [true] as never });
  }
}

export async function mineBlock(client: PublicClient): Promise<void> {
  await client.request({ method: 'evm_mine' as never, params: [] as never });
}
