// Our Permit2 and x402 upto proxy as the local chain places them (scripts/lib/deploy-permit2.mjs): runtime code copied
// to the canonical addresses, the EIP-712 domain derived from that address, and every refusal the upto scheme relies on.
import { randomBytes } from 'node:crypto';
import {
  BaseError,
  ContractFunctionRevertedError,
  createPublicClient,
  createWalletClient,
  defineChain,
  domainSeparator,
  http,
  parseSignature,
  serializeCompactSignature,
  signatureToCompactSignature,
  type Address,
  type Hex,
  type PrivateKeyAccount,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { eip3009Abi } from '../../libs/chain/src/abi';
import { loadChainManifest } from '../../libs/chain/src/manifest';
import { PERMIT2_ADDRESS, permit2Abi, uptoPermit2Types, X402_UPTO_PERMIT2_PROXY_ADDRESS, x402UptoPermit2ProxyAbi } from '../../libs/chain/src/permit2-abi';
import { deriveAccounts } from '../../scripts/lib/deploy.mjs';

const manifest = loadChainManifest(process.env.CHAIN_MANIFEST);
const chain = defineChain({
  id: manifest.chainId,
  name: 'Local Anvil',
  nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
  rpcUrls: { default: { http: [manifest.rpcUrl] } },
});
const transport = http(manifest.rpcUrl);
const client = createPublicClient({ chain, transport, pollingInterval: 50 });
const usdc = manifest.tokens.usdc.address as Address;
const merchant = manifest.accounts.merchant.address as Address;
// Anvil funds 20 accounts, the manifest names 16: #17 and #18 act as facilitators here, so no running facilitator's nonces move.
const [facilitator, stranger] = deriveAccounts(19)
  .slice(17)
  .map((k) => privateKeyToAccount(k.privateKey));
const payer = privateKeyToAccount(manifest.accounts.payers.at(-3)!.privateKey);

interface Permit {
  token: Address;
  max: bigint;
  nonce: bigint;
  deadline: bigint;
  to: Address;
  facilitator: Address;
  validAfter: bigint;
}

const now = async () => (await client.getBlock()).timestamp;
const freshNonce = () => BigInt(`0x${randomBytes(31).toString('hex')}`);

async function permit(overrides: Partial<Permit> = {}): Promise<Permit> {
  return {
    token: usdc,
    max: 5_000n,
    nonce: freshNonce(),
    deadline: (await now()) + 600n,
    to: merchant,
    facilitator: facilitator.address,
    validAfter: 0n,
    ...overrides,
  };
}

function sign(signer: PrivateKeyAccount, p: Permit): Promise<Hex> {
  return signer.signTypedData({
    domain: { name: 'Permit2', chainId: manifest.chainId, verifyingContract: PERMIT2_ADDRESS },
    types: uptoPermit2Types,
    primaryType: 'PermitWitnessTransferFrom',
    message: {
      permitted: { token: p.token, amount: p.max },
      spender: X402_UPTO_PERMIT2_PROXY_ADDRESS,
      nonce: p.nonce,
      deadline: p.deadline,
      witness: { to: p.to, facilitator: p.facilitator, validAfter: p.validAfter },
    },
  });
}

async function settle(p: Permit, amount: bigint, owner: Address, signature: Hex, sender: PrivateKeyAccount = facilitator) {
  const wallet = createWalletClient({ account: sender, chain, transport });
  const args = [
    { permitted: { token: p.token, amount: p.max }, nonce: p.nonce, deadline: p.deadline },
    amount,
    owner,
    { to: p.to, facilitator: p.facilitator, validAfter: p.validAfter },
    signature,
  ] as const;
  const hash = await wallet.writeContract({ address: X402_UPTO_PERMIT2_PROXY_ADDRESS, abi: x402UptoPermit2ProxyAbi, functionName: 'settle', args });
  return client.waitForTransactionReceipt({ hash });
}

/** The custom error a settle call reverts with, read from a simulation (a reverting write would not be sent). */
async function revertOf(p: Permit, amount: bigint, owner: Address, signature: Hex, sender: PrivateKeyAccount = facilitator): Promise<string | undefined> {
  try {
    await client.simulateContract({
      account: sender,
      address: X402_UPTO_PERMIT2_PROXY_ADDRESS,
      abi: x402UptoPermit2ProxyAbi,
      functionName: 'settle',
      args: [
        { permitted: { token: p.token, amount: p.max }, nonce: p.nonce, deadline: p.deadline },
        amount,
        owner,
        { to: p.to, facilitator: p.facilitator, validAfter: p.validAfter },
        signature,
      ],
    });
    return undefined;
  } catch (error) {
    const reverted = error instanceof BaseError ? error.walk((e) => e instanceof ContractFunctionRevertedError) : undefined;
    return reverted instanceof ContractFunctionRevertedError ? (reverted.data?.errorName ?? reverted.reason) : String(error);
  }
}

const balance = (owner: Address) => client.readContract({ address: usdc, abi: eip3009Abi, functionName: 'balanceOf', args: [owner] });
const nonceUsed = async (owner: Address, nonce: bigint) => {
  const word = await client.readContract({ address: PERMIT2_ADDRESS, abi: permit2Abi, functionName: 'nonceBitmap', args: [owner, nonce >> 8n] });
  return (word & (1n << (nonce & 0xffn))) !== 0n;
};

describe('Permit2 and the x402 upto proxy at their canonical addresses', () => {
  it('has code at both addresses, and the domain is derived from the canonical Permit2 address after setCode', async () => {
    expect(await client.getCode({ address: PERMIT2_ADDRESS })).toMatch(/^0x[0-9a-f]{100,}$/);
    expect(await client.getCode({ address: X402_UPTO_PERMIT2_PROXY_ADDRESS })).toMatch(/^0x[0-9a-f]{100,}$/);
    const separator = await client.readContract({ address: PERMIT2_ADDRESS, abi: permit2Abi, functionName: 'DOMAIN_SEPARATOR' });
    expect(separator).toBe(domainSeparator({ domain: { name: 'Permit2', chainId: manifest.chainId, verifyingContract: PERMIT2_ADDRESS } }));
    expect(await client.readContract({ address: X402_UPTO_PERMIT2_PROXY_ADDRESS, abi: x402UptoPermit2ProxyAbi, functionName: 'PERMIT2' })).toBe(
      PERMIT2_ADDRESS,
    );
    expect(await client.readContract({ address: X402_UPTO_PERMIT2_PROXY_ADDRESS, abi: x402UptoPermit2ProxyAbi, functionName: 'WITNESS_TYPE_STRING' })).toBe(
      'Witness witness)TokenPermissions(address token,uint256 amount)Witness(address to,address facilitator,uint256 validAfter)',
    );
  });

  it('charges any amount up to the maximum, once: the nonce is spent and a replay reverts InvalidNonce', async () => {
    const p = await permit();
    const signature = await sign(payer, p);
    const [payerBefore, merchantBefore] = [await balance(payer.address), await balance(merchant)];
    const receipt = await settle(p, 1_234n, payer.address, signature);
    expect(receipt.status).toBe('success');
    expect(await balance(payer.address)).toBe(payerBefore - 1_234n);
    expect(await balance(merchant)).toBe(merchantBefore + 1_234n);
    expect(await nonceUsed(payer.address, p.nonce)).toBe(true);
    expect(await revertOf(p, 1n, payer.address, signature)).toBe('InvalidNonce');
  });

  it('refuses an amount above the permitted maximum, and zero', async () => {
    const p = await permit();
    const signature = await sign(payer, p);
    expect(await revertOf(p, p.max + 1n, payer.address, signature)).toBe('AmountExceedsPermitted');
    expect(await revertOf(p, 0n, payer.address, signature)).toBe('InvalidAmount');
    expect(await revertOf(p, p.max, payer.address, signature)).toBeUndefined();
  });

  it('lets only the facilitator named in the witness settle', async () => {
    const p = await permit();
    expect(await revertOf(p, 10n, payer.address, await sign(payer, p), stranger)).toBe('UnauthorizedFacilitator');
  });

  it('refuses before validAfter and after the deadline', async () => {
    const early = await permit({ validAfter: (await now()) + 3_600n });
    expect(await revertOf(early, 10n, payer.address, await sign(payer, early))).toBe('PaymentTooEarly');
    const late = await permit({ deadline: (await now()) - 1n });
    expect(await revertOf(late, 10n, payer.address, await sign(payer, late))).toBe('SignatureExpired');
  });

  it('refuses a signature by anyone but the owner, a witness other than the one signed, and a nonce the owner invalidated', async () => {
    const p = await permit();
    expect(await revertOf(p, 10n, payer.address, await sign(stranger, p))).toBe('InvalidSigner');
    const signature = await sign(payer, p);
    expect(await revertOf({ ...p, to: stranger.address }, 10n, payer.address, signature)).toBe('InvalidSigner');
    expect(await revertOf(p, 10n, payer.address, '0x1234')).toBe('InvalidSignatureLength');

    const owner = createWalletClient({ account: payer, chain, transport });
    const hash = await owner.writeContract({
      address: PERMIT2_ADDRESS,
      abi: permit2Abi,
      functionName: 'invalidateUnorderedNonces',
      args: [p.nonce >> 8n, 1n << (p.nonce & 0xffn)],
    });
    await client.waitForTransactionReceipt({ hash });
    expect(await revertOf(p, 10n, payer.address, signature)).toBe('InvalidNonce');
  });

  it('accepts an EIP-2098 compact (64-byte) signature', async () => {
    const p = await permit();
    const compact = serializeCompactSignature(signatureToCompactSignature(parseSignature(await sign(payer, p))));
    expect((compact.length - 2) / 2).toBe(64);
    expect((await settle(p, 7n, payer.address, compact)).status).toBe('success');
  });

  it('accepts an ERC-1271 owner: the SmartWallet whose owner signed', async () => {
    const wallet = manifest.contracts.smartWallet as Address;
    const walletOwner = privateKeyToAccount(manifest.accounts.smartWalletOwner.privateKey);
    const p = await permit();
    expect(await revertOf(p, 10n, wallet, await sign(stranger, p))).toBe('InvalidContractSignature');
    const before = await balance(wallet);
    expect((await settle(p, 99n, wallet, await sign(walletOwner, p))).status).toBe('success');
    expect(await balance(wallet)).toBe(before - 99n);
  });
});
