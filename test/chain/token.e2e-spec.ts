// The local chain from test/global-setup.ts: MockUSDC behaves like Circle's FiatTokenV2_2 for EIP-3009,
// the test doubles misbehave as intended, and Multicall3 answers at its canonical address.
import { randomBytes } from 'node:crypto';
import {
  BaseError,
  ContractFunctionRevertedError,
  createPublicClient,
  createWalletClient,
  defineChain,
  domainSeparator,
  encodeFunctionData,
  http,
  parseAbi,
  parseEventLogs,
  parseSignature,
  toHex,
  type Address,
  type Hex,
  type PrivateKeyAccount,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import type { AuthorizationFields } from '../support/chain';
import { eip3009Abi, eip3009Types, erc1271Abi, ERC1271_MAGIC_VALUE, multicall3Abi, MULTICALL3_ADDRESS, smartWalletFactoryAbi } from '../../libs/chain/src/abi';
import { loadChainManifest, type ChainManifest } from '../../libs/chain/src/manifest';

const manifest: ChainManifest = loadChainManifest(process.env.CHAIN_MANIFEST);
const chain = defineChain({
  id: manifest.chainId,
  name: 'Local Anvil',
  nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
  rpcUrls: { default: { http: [manifest.rpcUrl] } },
  contracts: { multicall3: { address: MULTICALL3_ADDRESS } },
});
const transport = http(manifest.rpcUrl);
const publicClient = createPublicClient({ chain, transport, pollingInterval: 50 });

const acct = (k: { privateKey: Hex }) => privateKeyToAccount(k.privateKey);
// The last payers and signer are used here so other e2e files keep the first ones to themselves.
const payer = acct(manifest.accounts.payers.at(-1)!);
const otherPayer = acct(manifest.accounts.payers.at(-2)!);
const walletOwner = acct(manifest.accounts.smartWalletOwner);
const relayer = acct(manifest.accounts.facilitatorSigners.at(-1)!);
const merchant = acct(manifest.accounts.merchant);
const usdc = manifest.tokens.usdc.address;
const smartWallet = manifest.contracts.smartWallet;

const walletOf = (account: PrivateKeyAccount) => createWalletClient({ account, chain, transport, pollingInterval: 50 });
const relayerWallet = walletOf(relayer);

const newNonce = (): Hex => toHex(randomBytes(32));
const latestTimestamp = async () => (await publicClient.getBlock({ blockTag: 'latest' })).timestamp;
const balanceOf = (token: Address, who: Address) => publicClient.readContract({ address: token, abi: eip3009Abi, functionName: 'balanceOf', args: [who] });

type Authorization = AuthorizationFields;

async function authorization(over: Partial<Authorization> = {}): Promise<Authorization> {
  return {
    from: payer.address,
    to: merchant.address,
    value: 1_500_000n,
    validAfter: 0n,
    validBefore: (await latestTimestamp()) + 3600n,
    nonce: newNonce(),
    ...over,
  };
}

function sign(
  signer: PrivateKeyAccount,
  auth: Authorization,
  primaryType: 'TransferWithAuthorization' | 'ReceiveWithAuthorization' = 'TransferWithAuthorization',
  token: Address = usdc,
) {
  return signer.signTypedData({
    domain: { name: 'USD Coin', version: '2', chainId: manifest.chainId, verifyingContract: token },
    types: { [primaryType]: eip3009Types[primaryType] } as Pick<typeof eip3009Types, typeof primaryType>,
    primaryType,
    message: auth,
  });
}

const authArgs = (a: Authorization) => [a.from, a.to, a.value, a.validAfter, a.validBefore, a.nonce] as const;
const vrs = (signature: Hex) => {
  const { v, r, s } = parseSignature(signature);
  return [Number(v), r, s] as const;
};

async function mined(hash: Hex) {
  const receipt = await publicClient.waitForTransactionReceipt({ hash, pollingInterval: 50 });
  expect(receipt.status).toBe('success');
  return receipt;
}

/** Runs `fn` (a simulate/write) and returns the Solidity revert string it failed with. */
async function revertReason(fn: () => Promise<unknown>): Promise<string | undefined> {
  try {
    await fn();
  } catch (err) {
    const revert = err instanceof BaseError ? err.walk((e) => e instanceof ContractFunctionRevertedError) : undefined;
    if (revert instanceof ContractFunctionRevertedError) return revert.reason ?? revert.shortMessage;
    throw err;
  }
  throw new Error('expected a revert, but the call succeeded');
}

const simulateTransfer = (auth: Authorization, signature: Hex, token: Address = usdc) =>
  publicClient.simulateContract({
    account: relayer,
    address: token,
    abi: eip3009Abi,
    functionName: 'transferWithAuthorization',
    args: [...authArgs(auth), signature],
  });

describe('local chain manifest', () => {
  it('describes the chain that is running', async () => {
    expect(manifest.network).toBe(`eip155:${manifest.chainId}`);
    expect(await publicClient.getChainId()).toBe(manifest.chainId);
    expect(manifest.accounts.payers).toHaveLength(10);
    expect(manifest.accounts.facilitatorSigners).toHaveLength(4);
    expect(manifest.accounts.smartWalletOwner).toEqual(manifest.accounts.payers[0]);
    expect(await balanceOf(manifest.tokens.plain.address, manifest.accounts.payers[0].address)).toBeGreaterThan(0n);
  });
});

describe('MockUSDC (EIP-3009)', () => {
  it('has the USDC EIP-712 domain and metadata', async () => {
    const read = <F extends 'name' | 'version' | 'decimals' | 'symbol' | 'DOMAIN_SEPARATOR'>(functionName: F) =>
      publicClient.readContract({ address: usdc, abi: eip3009Abi, functionName });
    const [name, version, decimals, symbol, separator] = await Promise.all([
      read('name'),
      read('version'),
      read('decimals'),
      read('symbol'),
      read('DOMAIN_SEPARATOR'),
    ]);
    expect({ name, version, decimals, symbol }).toEqual({ name: 'USD Coin', version: '2', decimals: 6, symbol: 'USDC' });
    expect(separator).toBe(domainSeparator({ domain: { name: 'USD Coin', version: '2', chainId: 31337, verifyingContract: usdc } }));
  });

  it('transferWithAuthorization (v, r, s) moves exactly the amount, then rejects a replay', async () => {
    const auth = await authorization();
    const signature = await sign(payer, auth);
    const [payerBefore, merchantBefore] = await Promise.all([balanceOf(usdc, payer.address), balanceOf(usdc, merchant.address)]);

    const receipt = await mined(
      await relayerWallet.writeContract({
        address: usdc,
        abi: eip3009Abi,
        functionName: 'transferWithAuthorization',
        args: [...authArgs(auth), ...vrs(signature)],
      }),
    );

    expect(await balanceOf(usdc, payer.address)).toBe(payerBefore - auth.value);
    expect(await balanceOf(usdc, merchant.address)).toBe(merchantBefore + auth.value);
    const [transfer] = parseEventLogs({ abi: eip3009Abi, eventName: 'Transfer', logs: receipt.logs });
    expect(transfer.args).toEqual({ from: payer.address, to: merchant.address, value: auth.value });
    const [used] = parseEventLogs({ abi: eip3009Abi, eventName: 'AuthorizationUsed', logs: receipt.logs });
    expect(used.args).toEqual({ authorizer: payer.address, nonce: auth.nonce });
    expect(await publicClient.readContract({ address: usdc, abi: eip3009Abi, functionName: 'authorizationState', args: [payer.address, auth.nonce] })).toBe(
      true,
    );

    expect(await revertReason(() => simulateTransfer(auth, signature))).toBe('FiatTokenV2: authorization is used or canceled');
  });

  it('transferWithAuthorization (bytes signature) moves exactly the amount', async () => {
    const auth = await authorization({ value: 2_345_678n });
    const signature = await sign(payer, auth);
    const before = await balanceOf(usdc, merchant.address);
    const { request } = await simulateTransfer(auth, signature);
    await mined(await relayerWallet.writeContract(request));
    expect(await balanceOf(usdc, merchant.address)).toBe(before + auth.value);
  });

  it('rejects expired and not-yet-valid authorizations', async () => {
    const now = await latestTimestamp();
    const expired = await authorization({ validBefore: now - 1n });
    expect(await revertReason(async () => simulateTransfer(expired, await sign(payer, expired)))).toBe('FiatTokenV2: authorization is expired');
    const early = await authorization({ validAfter: now + 3600n, validBefore: now + 7200n });
    expect(await revertReason(async () => simulateTransfer(early, await sign(payer, early)))).toBe('FiatTokenV2: authorization is not yet valid');
  });

  it('rejects a signature by someone other than `from`', async () => {
    const auth = await authorization();
    expect(await revertReason(async () => simulateTransfer(auth, await sign(otherPayer, auth)))).toBe('FiatTokenV2: invalid signature');
    const [v, r, s] = vrs(await sign(otherPayer, auth));
    expect(
      await revertReason(() =>
        publicClient.simulateContract({
          account: relayer,
          address: usdc,
          abi: eip3009Abi,
          functionName: 'transferWithAuthorization',
          args: [...authArgs(auth), v, r, s],
        }),
      ),
    ).toBe('FiatTokenV2: invalid signature');
  });

  it('rejects a transfer above the balance with the FiatToken string', async () => {
    const balance = await balanceOf(usdc, payer.address);
    const auth = await authorization({ value: balance + 1n });
    expect(await revertReason(async () => simulateTransfer(auth, await sign(payer, auth)))).toBe('ERC20: transfer amount exceeds balance');
  });

  it('accepts an ERC-1271 SmartWallet as `from`, signed by its owner', async () => {
    expect(
      await publicClient.readContract({
        address: manifest.contracts.smartWalletFactory,
        abi: smartWalletFactoryAbi,
        functionName: 'predict',
        args: [walletOwner.address, toHex(0, { size: 32 })],
      }),
    ).toBe(smartWallet);

    const auth = await authorization({ from: smartWallet, value: 700_000n });
    const signature = await sign(walletOwner, auth);
    const [walletBefore, merchantBefore] = await Promise.all([balanceOf(usdc, smartWallet), balanceOf(usdc, merchant.address)]);
    const { request } = await simulateTransfer(auth, signature);
    await mined(await relayerWallet.writeContract(request));
    expect(await balanceOf(usdc, smartWallet)).toBe(walletBefore - auth.value);
    expect(await balanceOf(usdc, merchant.address)).toBe(merchantBefore + auth.value);

    // The wallet itself says no to anyone but its owner.
    const digest = toHex(randomBytes(32));
    const byOwner = await walletOwner.sign({ hash: digest });
    const byOther = await otherPayer.sign({ hash: digest });
    const check = (sig: Hex) => publicClient.readContract({ address: smartWallet, abi: erc1271Abi, functionName: 'isValidSignature', args: [digest, sig] });
    expect(await check(byOwner)).toBe(ERC1271_MAGIC_VALUE);
    expect(await check(byOther)).toBe('0xffffffff');
    const otherAuth = await authorization({ from: smartWallet });
    expect(await revertReason(async () => simulateTransfer(otherAuth, await sign(otherPayer, otherAuth)))).toBe('FiatTokenV2: invalid signature');
  });

  it('receiveWithAuthorization only works for the payee as caller', async () => {
    const auth = await authorization({ value: 1_000n });
    const signature = await sign(payer, auth, 'ReceiveWithAuthorization');
    const receive = (account: PrivateKeyAccount) =>
      publicClient.simulateContract({
        account,
        address: usdc,
        abi: eip3009Abi,
        functionName: 'receiveWithAuthorization',
        args: [...authArgs(auth), ...vrs(signature)],
      });
    expect(await revertReason(() => receive(relayer))).toBe('FiatTokenV2: caller must be the payee');

    const before = await balanceOf(usdc, merchant.address);
    const { request } = await receive(merchant);
    await mined(await walletOf(merchant).writeContract(request));
    expect(await balanceOf(usdc, merchant.address)).toBe(before + auth.value);
  });

  it('cancelAuthorization marks the nonce used, so the transfer can no longer run', async () => {
    const auth = await authorization();
    const transferSignature = await sign(payer, auth);
    const cancelSignature = await payer.signTypedData({
      domain: { name: 'USD Coin', version: '2', chainId: manifest.chainId, verifyingContract: usdc },
      types: { CancelAuthorization: eip3009Types.CancelAuthorization },
      primaryType: 'CancelAuthorization',
      message: { authorizer: payer.address, nonce: auth.nonce },
    });
    const receipt = await mined(
      await relayerWallet.writeContract({
        address: usdc,
        abi: eip3009Abi,
        functionName: 'cancelAuthorization',
        args: [payer.address, auth.nonce, ...vrs(cancelSignature)],
      }),
    );
    const [canceled] = parseEventLogs({ abi: eip3009Abi, eventName: 'AuthorizationCanceled', logs: receipt.logs });
    expect(canceled.args).toEqual({ authorizer: payer.address, nonce: auth.nonce });
    expect(await publicClient.readContract({ address: usdc, abi: eip3009Abi, functionName: 'authorizationState', args: [payer.address, auth.nonce] })).toBe(
      true,
    );
    expect(await revertReason(() => simulateTransfer(auth, transferSignature))).toBe('FiatTokenV2: authorization is used or canceled');
  });
});

describe('test doubles', () => {
  it('MisreportingUSDC moves the full amount but emits Transfer(value - 1)', async () => {
    const token = manifest.tokens.misreportingUsdc.address;
    const auth = await authorization({ value: 5_000n });
    const signature = await sign(payer, auth, 'TransferWithAuthorization', token);
    const [payerBefore, merchantBefore] = await Promise.all([balanceOf(token, payer.address), balanceOf(token, merchant.address)]);
    const receipt = await mined(
      await relayerWallet.writeContract({
        address: token,
        abi: eip3009Abi,
        functionName: 'transferWithAuthorization',
        args: [...authArgs(auth), ...vrs(signature)],
      }),
    );
    const transfers = parseEventLogs({ abi: eip3009Abi, eventName: 'Transfer', logs: receipt.logs });
    expect(transfers).toHaveLength(1);
    expect(transfers[0].args).toEqual({ from: payer.address, to: merchant.address, value: auth.value - 1n });
    expect(await balanceOf(token, payer.address)).toBe(payerBefore - auth.value);
    expect(await balanceOf(token, merchant.address)).toBe(merchantBefore + auth.value);
  });

  it('PlainToken has no transferWithAuthorization', async () => {
    const token = manifest.tokens.plain.address;
    const auth = await authorization();
    const signature = await sign(payer, auth, 'TransferWithAuthorization', token);
    await expect(simulateTransfer(auth, signature, token)).rejects.toThrow();
    await expect(
      publicClient.readContract({ address: token, abi: eip3009Abi, functionName: 'authorizationState', args: [payer.address, auth.nonce] }),
    ).rejects.toThrow();
  });
});

describe('Multicall3 at the canonical address', () => {
  it('answers aggregate3 and tryAggregate, and serves viem multicall', async () => {
    const balanceCall = encodeFunctionData({ abi: eip3009Abi, functionName: 'balanceOf', args: [payer.address] });
    const nameCall = encodeFunctionData({ abi: eip3009Abi, functionName: 'name' });
    const stateCall = encodeFunctionData({ abi: eip3009Abi, functionName: 'authorizationState', args: [payer.address, newNonce()] });

    // aggregate3/tryAggregate are payable (as in Multicall3), so viem reads them through simulateContract.
    const { result: results } = await publicClient.simulateContract({
      address: MULTICALL3_ADDRESS,
      abi: multicall3Abi,
      functionName: 'aggregate3',
      args: [
        [
          { target: usdc, allowFailure: false, callData: balanceCall },
          { target: manifest.tokens.plain.address, allowFailure: false, callData: nameCall },
          { target: manifest.tokens.plain.address, allowFailure: true, callData: stateCall },
        ],
      ],
    });
    expect(results.map((r) => r.success)).toEqual([true, true, false]);
    expect(BigInt(results[0].returnData)).toBe(await balanceOf(usdc, payer.address));

    const { result: tried } = await publicClient.simulateContract({
      address: MULTICALL3_ADDRESS,
      abi: multicall3Abi,
      functionName: 'tryAggregate',
      args: [
        false,
        [
          { target: usdc, callData: nameCall },
          { target: manifest.tokens.plain.address, callData: stateCall },
        ],
      ],
    });
    expect(tried.map((r) => r.success)).toEqual([true, false]);
    await expect(
      publicClient.simulateContract({
        address: MULTICALL3_ADDRESS,
        abi: multicall3Abi,
        functionName: 'tryAggregate',
        args: [true, [{ target: manifest.tokens.plain.address, callData: stateCall }]],
      }),
    ).rejects.toThrow(/Multicall3: call failed/);

    const viaViem = await publicClient.multicall({
      contracts: [
        { address: usdc, abi: eip3009Abi, functionName: 'version' },
        { address: manifest.tokens.plain.address, abi: parseAbi(['function symbol() view returns (string)']), functionName: 'symbol' },
      ],
      allowFailure: false,
    });
    expect(viaViem).toEqual(['2', 'PLN']);
  });
});
