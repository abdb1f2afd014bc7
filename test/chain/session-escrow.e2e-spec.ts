// contracts/EvmPaymentChannelEscrow.sol on anvil, function by function (draft-evm-session-00, recurring-and-streaming.md
// §2.1): the core six, the EIP-3009 relayed open/top-up, the views, the grace period, ERC-1271 payers, high-s refused.
// It runs on a chain of its own because it moves the chain's clock through the grace period.
import { randomBytes } from 'node:crypto';
import {
  BaseError,
  ContractFunctionRevertedError,
  type ContractFunctionName,
  createWalletClient,
  erc20Abi,
  hashDomain,
  hashTypedData,
  http,
  parseEventLogs,
  toHex,
  zeroAddress,
  type Address,
  type Hex,
  type PrivateKeyAccount,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { eip3009Abi, sessionEscrowAbi } from '@mp/chain';
import {
  computeChannelId,
  openAuthorizationNonce,
  receiveWithAuthorizationTypedData,
  payeeAuthorizationTypedData,
  SECP256K1_HALF_ORDER,
  topUpAuthorizationNonce,
  voucherTypedData,
} from '@mp/mpp';
import { compileContracts } from '../../scripts/lib/contracts.mjs';
import { startOwnChain, type OwnChain } from '../support/own-chain';
import { openWithAuthorizationArgs } from './escrow-calls';

const SECP256K1_ORDER = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;

let chain: OwnChain;
let escrow: Address;
let usdc: Address;
let payer: PrivateKeyAccount;
let payee: PrivateKeyAccount;
let signer: PrivateKeyAccount;
let relayer: PrivateKeyAccount;
let walletOwner: PrivateKeyAccount;
let smartWallet: Address;

beforeAll(async () => {
  chain = await startOwnChain(31_714);
  const m = chain.manifest;
  escrow = m.contracts.sessionEscrow as Address;
  usdc = m.tokens.usdc.address as Address;
  payer = privateKeyToAccount(m.accounts.payers[1]!.privateKey as Hex);
  signer = privateKeyToAccount(m.accounts.payers[2]!.privateKey as Hex);
  walletOwner = privateKeyToAccount(m.accounts.smartWalletOwner.privateKey as Hex);
  payee = privateKeyToAccount(m.accounts.merchant.privateKey as Hex);
  relayer = privateKeyToAccount(m.accounts.facilitatorSigners[0]!.privateKey as Hex);
  smartWallet = m.contracts.smartWallet as Address;
});

afterAll(async () => {
  await chain?.stop();
});

const wallet = (account: PrivateKeyAccount) => createWalletClient({ account, chain: chain.client.chain, transport: http(chain.manifest.rpcUrl) });
const newSalt = (): Hex => toHex(randomBytes(32));
const domain = () => ({ chainId: chain.manifest.chainId, escrowContract: escrow });

type EscrowFunction = ContractFunctionName<typeof sessionEscrowAbi, 'nonpayable'>;

/** Sends an escrow call as `account` and returns its successful receipt (a revert fails the test with its name). */
async function send(account: PrivateKeyAccount, functionName: EscrowFunction, args: readonly unknown[]) {
  const { request } = await chain.client.simulateContract({ account, address: escrow, abi: sessionEscrowAbi, functionName, args } as never);
  const hash = await wallet(account).writeContract(request as never);
  const receipt = await chain.client.waitForTransactionReceipt({ hash, pollingInterval: 50 });
  expect(receipt.status).toBe('success');
  return receipt;
}

/** The escrow's custom error name a call reverts with. */
async function revertOf(account: PrivateKeyAccount, functionName: EscrowFunction, args: readonly unknown[]): Promise<string> {
  try {
    await chain.client.simulateContract({ account, address: escrow, abi: sessionEscrowAbi, functionName, args } as never);
  } catch (error) {
    const revert = error instanceof BaseError ? error.walk((e) => e instanceof ContractFunctionRevertedError) : undefined;
    if (revert instanceof ContractFunctionRevertedError) return revert.data?.errorName ?? revert.reason ?? 'unnamed';
    throw error;
  }
  throw new Error(`expected ${functionName} to revert`);
}

const balance = (who: Address) => chain.client.readContract({ address: usdc, abi: eip3009Abi, functionName: 'balanceOf', args: [who] });
const getChannel = (channelId: Hex) => chain.client.readContract({ address: escrow, abi: sessionEscrowAbi, functionName: 'getChannel', args: [channelId] });

async function approve(account: PrivateKeyAccount, amount: bigint) {
  const hash = await wallet(account).writeContract({
    address: usdc,
    abi: erc20Abi,
    functionName: 'approve',
    args: [escrow, amount],
    chain: chain.client.chain,
  });
  expect((await chain.client.waitForTransactionReceipt({ hash, pollingInterval: 50 })).status).toBe('success');
}

async function openDirect(deposit: bigint, authorizedSigner: Address = zeroAddress, salt = newSalt()) {
  await approve(payer, deposit);
  const receipt = await send(payer, 'open', [payee.address, usdc, deposit, salt, authorizedSigner]);
  const channelId = computeChannelId({ payer: payer.address, payee: payee.address, token: usdc, salt, authorizedSigner }, escrow, chain.manifest.chainId);
  return { channelId, salt, receipt };
}

const voucher = (by: { signTypedData: PrivateKeyAccount['signTypedData'] }, channelId: Hex, cumulativeAmount: bigint) =>
  by.signTypedData(voucherTypedData(domain(), { channelId, cumulativeAmount }));

/** The malleable twin of a signature: s → n − s, v flipped. Same signer, high s. */
function highS(signature: Hex): Hex {
  const s = BigInt(`0x${signature.slice(66, 130)}`);
  const v = parseInt(signature.slice(130), 16);
  return `${signature.slice(0, 66)}${(SECP256K1_ORDER - s).toString(16).padStart(64, '0')}${(v === 27 ? 28 : 27).toString(16)}` as Hex;
}

async function receiveAuthorization(from: Address, by: PrivateKeyAccount, value: bigint, nonce: Hex, window?: { validAfter: bigint; validBefore: bigint }) {
  const now = BigInt(await chain.now());
  const message = { from, to: escrow, value, validAfter: window?.validAfter ?? 0n, validBefore: window?.validBefore ?? now + 600n, nonce };
  const signature = await by.signTypedData(
    receiveWithAuthorizationTypedData({ name: 'USD Coin', version: '2', chainId: chain.manifest.chainId, address: usdc }, message),
  );
  return { ...message, signature };
}

describe('session escrow: ABI and views', () => {
  it('the ABI literal in @mp/chain is the compiled one', () => {
    const strip = (value: unknown): unknown =>
      Array.isArray(value)
        ? value.map(strip)
        : value && typeof value === 'object'
          ? Object.fromEntries(
              Object.entries(value)
                .filter(([k]) => k !== 'internalType')
                .map(([k, v]) => [k, strip(v)]),
            )
          : value;
    const key = (e: any) => `${e.type}${e.name ?? ''}`;
    const compiled = (strip(compileContracts().artifacts.EvmPaymentChannelEscrow!.abi) as any[]).sort((a, b) => key(a).localeCompare(key(b)));
    expect(JSON.parse(JSON.stringify(sessionEscrowAbi))).toEqual(compiled);
  });

  it('CLOSE_GRACE_PERIOD is 15 minutes, the domain is ("EVM Payment Channel", "1", chainId, escrow), ids and digests match the codec', async () => {
    const read = (functionName: any, args: readonly unknown[] = []) =>
      chain.client.readContract({ address: escrow, abi: sessionEscrowAbi, functionName, args } as never);
    expect(await read('CLOSE_GRACE_PERIOD')).toBe(900n);
    expect(await read('domainSeparator')).toBe(
      hashDomain({
        domain: { name: 'EVM Payment Channel', version: '1', chainId: BigInt(chain.manifest.chainId), verifyingContract: escrow },
        types: {
          EIP712Domain: [
            { name: 'name', type: 'string' },
            { name: 'version', type: 'string' },
            { name: 'chainId', type: 'uint256' },
            { name: 'verifyingContract', type: 'address' },
          ],
        },
      }),
    );
    const salt = newSalt();
    const terms = { payer: payer.address, payee: payee.address, token: usdc, salt, authorizedSigner: signer.address };
    expect(await read('computeChannelId', [terms.payer, terms.payee, terms.token, salt, terms.authorizedSigner])).toBe(
      computeChannelId(terms, escrow, chain.manifest.chainId),
    );
    const channelId = computeChannelId(terms, escrow, chain.manifest.chainId);
    expect(await read('getVoucherDigest', [channelId, 123n])).toBe(hashTypedData(voucherTypedData(domain(), { channelId, cumulativeAmount: 123n })));
  });
});

describe('session escrow: open, settle, topUp, close', () => {
  it('open pulls the deposit and records the channel; ZeroDeposit; the same terms again are ChannelAlreadyExists', async () => {
    const before = await balance(payer.address);
    const { channelId, salt, receipt } = await openDirect(1_000n);
    expect(await balance(payer.address)).toBe(before - 1_000n);
    const [opened] = parseEventLogs({ abi: sessionEscrowAbi, logs: receipt.logs, eventName: 'ChannelOpened' });
    expect(opened!.args).toEqual({ channelId, payer: payer.address, payee: payee.address, token: usdc, authorizedSigner: zeroAddress, salt, deposit: 1_000n });
    expect(await getChannel(channelId)).toEqual({
      finalized: false,
      closeRequestedAt: 0n,
      payer: payer.address,
      payee: payee.address,
      token: usdc,
      authorizedSigner: zeroAddress,
      deposit: 1_000n,
      settled: 0n,
    });
    await approve(payer, 1_000n);
    expect(await revertOf(payer, 'open', [payee.address, usdc, 1_000n, salt, zeroAddress])).toBe('ChannelAlreadyExists');
    expect(await revertOf(payer, 'open', [payee.address, usdc, 0n, newSalt(), zeroAddress])).toBe('ZeroDeposit');
  });

  it('settle pays the payee the delta of a cumulative voucher; refuses non-payee, non-increasing, over-deposit, forged, high-s and compact', async () => {
    const { channelId } = await openDirect(1_000n);
    const v300 = await voucher(payer, channelId, 300n);
    expect(await revertOf(payer, 'settle', [channelId, 300n, v300])).toBe('NotPayee');
    expect(await revertOf(payee, 'settle', [channelId, 0n, await voucher(payer, channelId, 0n)])).toBe('AmountNotIncreasing');
    expect(await revertOf(payee, 'settle', [channelId, 1_001n, await voucher(payer, channelId, 1_001n)])).toBe('AmountExceedsDeposit');
    expect(await revertOf(payee, 'settle', [channelId, 300n, await voucher(signer, channelId, 300n)])).toBe('InvalidSignature');
    expect(await revertOf(payee, 'settle', [channelId, 301n, v300])).toBe('InvalidSignature');
    const twin = highS(v300);
    expect(BigInt(`0x${twin.slice(66, 130)}`) > SECP256K1_HALF_ORDER).toBe(true);
    expect(await revertOf(payee, 'settle', [channelId, 300n, twin])).toBe('InvalidSignature');
    expect(await revertOf(payee, 'settle', [channelId, 300n, v300.slice(0, 130) as Hex])).toBe('InvalidSignature');

    const payeeBefore = await balance(payee.address);
    const receipt = await send(payee, 'settle', [channelId, 300n, v300]);
    const [settled] = parseEventLogs({ abi: sessionEscrowAbi, logs: receipt.logs, eventName: 'Settled' });
    expect(settled!.args).toMatchObject({ cumulativeAmount: 300n, deltaPaid: 300n, newSettled: 300n });
    await send(payee, 'settle', [channelId, 700n, await voucher(payer, channelId, 700n)]);
    expect(await balance(payee.address)).toBe(payeeBefore + 700n);
    expect((await getChannel(channelId)).settled).toBe(700n);
    expect(await revertOf(payee, 'settle', [channelId, 300n, v300])).toBe('AmountNotIncreasing');
  });

  it('topUp: payer only, raises the deposit, cancels a pending close request', async () => {
    const { channelId } = await openDirect(500n);
    await approve(payer, 250n);
    expect(await revertOf(payee, 'topUp', [channelId, 250n])).toBe('NotPayer');
    expect(await revertOf(payer, 'topUp', [channelId, 0n])).toBe('ZeroDeposit');
    await send(payer, 'requestClose', [channelId]);
    expect((await getChannel(channelId)).closeRequestedAt).toBeGreaterThan(0n);
    const receipt = await send(payer, 'topUp', [channelId, 250n]);
    expect(parseEventLogs({ abi: sessionEscrowAbi, logs: receipt.logs }).map((e) => e.eventName)).toEqual(['CloseRequestCancelled', 'TopUp']);
    expect(await getChannel(channelId)).toMatchObject({ deposit: 750n, closeRequestedAt: 0n });
  });

  it('close settles the voucher and refunds the rest (settled + refunded = deposit); afterwards everything is ChannelFinalized', async () => {
    const { channelId, salt } = await openDirect(1_000n);
    await send(payee, 'settle', [channelId, 100n, await voucher(payer, channelId, 100n)]);
    expect(await revertOf(payer, 'close', [channelId, 400n, await voucher(payer, channelId, 400n)])).toBe('NotPayee');
    const [payerBefore, payeeBefore] = [await balance(payer.address), await balance(payee.address)];
    const receipt = await send(payee, 'close', [channelId, 400n, await voucher(payer, channelId, 400n)]);
    const [closed] = parseEventLogs({ abi: sessionEscrowAbi, logs: receipt.logs, eventName: 'ChannelClosed' });
    expect(closed!.args).toMatchObject({ settledToPayee: 400n, refundedToPayer: 600n });
    expect(await balance(payee.address)).toBe(payeeBefore + 300n);
    expect(await balance(payer.address)).toBe(payerBefore + 600n);
    expect(await getChannel(channelId)).toMatchObject({ finalized: true, settled: 400n, deposit: 1_000n });
    for (const [account, fn, args] of [
      [payee, 'settle', [channelId, 500n, await voucher(payer, channelId, 500n)]],
      [payee, 'close', [channelId, 500n, '0x']],
      [payer, 'topUp', [channelId, 1n]],
      [payer, 'requestClose', [channelId]],
      [payer, 'withdraw', [channelId]],
    ] as const)
      expect(await revertOf(account, fn, args)).toBe('ChannelFinalized');
    await approve(payer, 1_000n);
    expect(await revertOf(payer, 'open', [payee.address, usdc, 1_000n, salt, zeroAddress])).toBe('ChannelAlreadyExists');
    expect(await revertOf(payee, 'settle', [newSalt(), 1n, '0x'])).toBe('ChannelNotFound');
  });

  it('close at or below settled forfeits: no signature read, nothing more to the payee, the rest to the payer', async () => {
    const { channelId } = await openDirect(1_000n);
    await send(payee, 'settle', [channelId, 250n, await voucher(payer, channelId, 250n)]);
    const [payerBefore, payeeBefore] = [await balance(payer.address), await balance(payee.address)];
    const receipt = await send(payee, 'close', [channelId, 0n, '0x']);
    const [closed] = parseEventLogs({ abi: sessionEscrowAbi, logs: receipt.logs, eventName: 'ChannelClosed' });
    expect(closed!.args).toMatchObject({ settledToPayee: 250n, refundedToPayer: 750n });
    expect(await balance(payee.address)).toBe(payeeBefore);
    expect(await balance(payer.address)).toBe(payerBefore + 750n);
  });
});

describe('session escrow: forced close', () => {
  it('requestClose starts the 15-minute grace; the payee may still settle; withdraw only after it, paying deposit − settled', async () => {
    const { channelId } = await openDirect(1_000n);
    expect(await revertOf(payee, 'requestClose', [channelId])).toBe('NotPayer');
    expect(await revertOf(payer, 'withdraw', [channelId])).toBe('CloseNotReady');
    const receipt = await send(payer, 'requestClose', [channelId]);
    const requestedAt = (await getChannel(channelId)).closeRequestedAt;
    const [requested] = parseEventLogs({ abi: sessionEscrowAbi, logs: receipt.logs, eventName: 'CloseRequested' });
    expect(requested!.args.closeGraceEnd).toBe(requestedAt + 900n);
    // a second request keeps the first clock
    await chain.increaseTime(60);
    await send(payer, 'requestClose', [channelId]);
    expect((await getChannel(channelId)).closeRequestedAt).toBe(requestedAt);

    await send(payee, 'settle', [channelId, 200n, await voucher(payer, channelId, 200n)]);
    await chain.increaseTime(900 - 60 - 10);
    expect(await revertOf(payer, 'withdraw', [channelId])).toBe('CloseNotReady');
    await chain.increaseTime(10);
    expect(await revertOf(payee, 'withdraw', [channelId])).toBe('NotPayer');
    const before = await balance(payer.address);
    const withdrawn = await send(payer, 'withdraw', [channelId]);
    const [closed] = parseEventLogs({ abi: sessionEscrowAbi, logs: withdrawn.logs, eventName: 'ChannelClosed' });
    expect(closed!.args).toMatchObject({ settledToPayee: 200n, refundedToPayer: 800n });
    expect(await balance(payer.address)).toBe(before + 800n);
    expect(await revertOf(payee, 'settle', [channelId, 300n, await voucher(payer, channelId, 300n)])).toBe('ChannelFinalized');
  });
});

describe('session escrow: signers', () => {
  it('an authorizedSigner signs instead of the payer', async () => {
    const { channelId } = await openDirect(1_000n, signer.address);
    expect(await revertOf(payee, 'settle', [channelId, 100n, await voucher(payer, channelId, 100n)])).toBe('InvalidSignature');
    await send(payee, 'settle', [channelId, 100n, await voucher(signer, channelId, 100n)]);
  });

  it('an ERC-1271 payer (the SmartWallet) opens by relayed authorization, and its vouchers verify through isValidSignature', async () => {
    const salt = newSalt();
    const terms = { payer: smartWallet, payee: payee.address, token: usdc, salt, authorizedSigner: zeroAddress };
    const auth = await receiveAuthorization(smartWallet, walletOwner, 2_000n, openAuthorizationNonce(terms));
    const walletBefore = await balance(smartWallet);
    await send(relayer, 'openWithAuthorization', openWithAuthorizationArgs({ terms, deposit: auth.value, ...auth }));
    expect(await balance(smartWallet)).toBe(walletBefore - 2_000n);
    const channelId = computeChannelId(terms, escrow, chain.manifest.chainId);
    expect((await getChannel(channelId)).payer).toBe(smartWallet);
    expect(await revertOf(payee, 'settle', [channelId, 500n, await voucher(payer, channelId, 500n)])).toBe('InvalidSignature');
    const ownerVoucher = await voucher(walletOwner, channelId, 500n);
    expect(await revertOf(payee, 'settle', [channelId, 500n, highS(ownerVoucher)])).toBe('InvalidSignature');
    await send(payee, 'settle', [channelId, 500n, ownerVoucher]);
    expect((await getChannel(channelId)).settled).toBe(500n);
  });
});

describe('session escrow: relayed open and top-up (EIP-3009 receiveWithAuthorization)', () => {
  it('openWithAuthorization: nonce = keccak256(abi.encode(from, payee, token, salt, authorizedSigner)), else NonceMismatch; used and expired refused', async () => {
    const salt = newSalt();
    const terms = { payer: payer.address, payee: payee.address, token: usdc, salt, authorizedSigner: zeroAddress };
    const args = (a: Awaited<ReturnType<typeof receiveAuthorization>>) => openWithAuthorizationArgs({ terms, deposit: a.value, ...a });
    expect(await revertOf(relayer, 'openWithAuthorization', args(await receiveAuthorization(payer.address, payer, 1_000n, newSalt())))).toBe('NonceMismatch');
    const now = BigInt(await chain.now());
    const expired = await receiveAuthorization(payer.address, payer, 1_000n, openAuthorizationNonce(terms), { validAfter: 0n, validBefore: now - 1n });
    expect(await revertOf(relayer, 'openWithAuthorization', args(expired))).toBe('AuthorizationExpired');
    const notYet = await receiveAuthorization(payer.address, payer, 1_000n, openAuthorizationNonce(terms), {
      validAfter: now + 600n,
      validBefore: now + 1200n,
    });
    expect(await revertOf(relayer, 'openWithAuthorization', args(notYet))).toBe('AuthorizationExpired');

    const good = await receiveAuthorization(payer.address, payer, 1_000n, openAuthorizationNonce(terms));
    await send(relayer, 'openWithAuthorization', args(good));
    const channelId = computeChannelId(terms, escrow, chain.manifest.chainId);
    expect(await getChannel(channelId)).toMatchObject({ payer: payer.address, deposit: 1_000n });
    expect(await revertOf(relayer, 'openWithAuthorization', args(good))).toBe('NonceAlreadyUsed');
  });

  it('topUpWithAuthorization: nonce = keccak256(abi.encode(channelId, additionalDeposit, from, topUpSalt)); only the payer funds it', async () => {
    const { channelId } = await openDirect(100n);
    await send(payer, 'requestClose', [channelId]);
    const topUpSalt = newSalt();
    const a = await receiveAuthorization(payer.address, payer, 400n, topUpAuthorizationNonce(channelId, 400n, payer.address, topUpSalt));
    const args = (amount: bigint, from: Address, auth = a) =>
      [channelId, amount, from, topUpSalt, auth.validAfter, auth.validBefore, auth.nonce, auth.signature] as const;
    expect(await revertOf(relayer, 'topUpWithAuthorization', args(401n, payer.address))).toBe('NonceMismatch');
    const foreign = await receiveAuthorization(signer.address, signer, 400n, topUpAuthorizationNonce(channelId, 400n, signer.address, topUpSalt));
    expect(await revertOf(relayer, 'topUpWithAuthorization', args(400n, signer.address, foreign))).toBe('NotPayer');
    const receipt = await send(relayer, 'topUpWithAuthorization', args(400n, payer.address));
    expect(parseEventLogs({ abi: sessionEscrowAbi, logs: receipt.logs }).map((e) => e.eventName)).toEqual(['CloseRequestCancelled', 'TopUp']);
    expect(await getChannel(channelId)).toMatchObject({ deposit: 500n, closeRequestedAt: 0n });
  });
});

describe('session escrow: relayed payee profile (settle/closeWithAuthorization)', () => {
  const payeeSigned = async (kind: 'settle' | 'close', by: PrivateKeyAccount, channelId: Hex, cumulativeAmount: bigint, nonce: bigint, deadline: bigint) =>
    by.signTypedData(payeeAuthorizationTypedData(kind, domain(), { channelId, cumulativeAmount, nonce, deadline }));

  it('anyone submits a settle or close the payee signed; one used-set over (payee, channelId, nonce); the deadline holds', async () => {
    const { channelId } = await openDirect(1_000n);
    const deadline = BigInt(await chain.now()) + 600n;
    const v300 = await voucher(payer, channelId, 300n);
    const args = async (kind: 'settle' | 'close', amount: bigint, nonce: bigint, by = payee, until = deadline, v = v300) =>
      [channelId, amount, nonce, until, await payeeSigned(kind, by, channelId, amount, nonce, until), v] as const;

    expect(await revertOf(relayer, 'settleWithAuthorization', await args('settle', 300n, 1n, payer))).toBe('InvalidSignature');
    expect(await revertOf(relayer, 'settleWithAuthorization', await args('close', 300n, 1n))).toBe('InvalidSignature');
    expect(await revertOf(relayer, 'settleWithAuthorization', await args('settle', 300n, 1n, payee, BigInt(await chain.now()) - 1n))).toBe(
      'AuthorizationExpired',
    );
    const payeeBefore = await balance(payee.address);
    const settleArgs = await args('settle', 300n, 1n);
    await send(relayer, 'settleWithAuthorization', settleArgs);
    expect(await balance(payee.address)).toBe(payeeBefore + 300n);
    expect(await revertOf(relayer, 'settleWithAuthorization', settleArgs)).toBe('NonceAlreadyUsed');
    expect(await revertOf(relayer, 'closeWithAuthorization', await args('close', 300n, 1n))).toBe('NonceAlreadyUsed');
    expect(
      await chain.client.readContract({ address: escrow, abi: sessionEscrowAbi, functionName: 'payeeAuthorizationUsed', args: [payee.address, channelId, 1n] }),
    ).toBe(true);

    const v600 = await voucher(payer, channelId, 600n);
    const receipt = await send(relayer, 'closeWithAuthorization', await args('close', 600n, 2n, payee, deadline, v600));
    const [closed] = parseEventLogs({ abi: sessionEscrowAbi, logs: receipt.logs, eventName: 'ChannelClosed' });
    expect(closed!.args).toMatchObject({ settledToPayee: 600n, refundedToPayer: 400n });
    expect(await balance(payee.address)).toBe(payeeBefore + 600n);
  });
});
