// The buyer client of the MPP evm session (libs/clients/src/evm-session) against the escrow on anvil, with no
// facilitator: the payee's side is played here by direct escrow calls (openWithAuthorization, settle, close) made from
// the payloads the client produces, exactly what the facilitator will submit. Own chain: the grace period moves time.
import { createWalletClient, erc20Abi, http, parseEventLogs, recoverTypedDataAddress, type Address, type Hex, type PrivateKeyAccount } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { sessionEscrowAbi } from '@mp/chain';
import { EvmSessionChannelClient, SessionClientError, type BuyerChannel } from '@mp/clients/evm-session';
import { checkEvmSession, createChallenge, evmSessionReceipt, normalizeEvmSessionRequest, voucherTypedData, type EvmSessionRequest } from '@mp/mpp';
import { startOwnChain, type OwnChain } from '../support/own-chain';
import { openWithAuthorizationArgs } from './escrow-calls';

let chain: OwnChain;
let escrow: Address;
let usdc: Address;
let payer: PrivateKeyAccount;
let delegate: PrivateKeyAccount;
let walletOwner: PrivateKeyAccount;
let payee: PrivateKeyAccount;
let request: EvmSessionRequest;

beforeAll(async () => {
  chain = await startOwnChain(31_715);
  const m = chain.manifest;
  escrow = m.contracts.sessionEscrow as Address;
  usdc = m.tokens.usdc.address as Address;
  payer = privateKeyToAccount(m.accounts.payers[3]!.privateKey as Hex);
  delegate = privateKeyToAccount(m.accounts.payers[4]!.privateKey as Hex);
  walletOwner = privateKeyToAccount(m.accounts.smartWalletOwner.privateKey as Hex);
  payee = privateKeyToAccount(m.accounts.merchant.privateKey as Hex);
  request = normalizeEvmSessionRequest({
    amount: '10',
    currency: usdc,
    recipient: payee.address,
    suggestedDeposit: '1000',
    methodDetails: { chainId: m.chainId, escrowContract: escrow, credentialTypes: ['authorization', 'hash'] },
  });
});

afterAll(async () => {
  await chain?.stop();
});

const wallet = (account: PrivateKeyAccount) => createWalletClient({ account, chain: chain.client.chain!, transport: http(chain.manifest.rpcUrl) });
const client = (account: PrivateKeyAccount, voucherSigner?: PrivateKeyAccount) =>
  new EvmSessionChannelClient(chain.client, { address: account.address, signer: account, wallet: wallet(account) }, voucherSigner);
const balance = (who: Address) => chain.client.readContract({ address: usdc, abi: erc20Abi, functionName: 'balanceOf', args: [who] });
const challenge = () => createChallenge('buyer-spec-secret-at-least-32-bytes!!', { realm: 'api.test', method: 'evm', intent: 'session', request });
const now = async () => BigInt(await chain.now());

/** The payee's escrow call (what the facilitator submits), returning the successful receipt. */
async function asPayee(functionName: 'settle' | 'close' | 'openWithAuthorization' | 'topUpWithAuthorization', args: readonly unknown[]) {
  const { request: tx } = await chain.client.simulateContract({ account: payee, address: escrow, abi: sessionEscrowAbi, functionName, args } as never);
  const hash = await wallet(payee).writeContract(tx as never);
  const receipt = await chain.client.waitForTransactionReceipt({ hash, pollingInterval: 50 });
  expect(receipt.status).toBe('success');
  return receipt;
}

const onChain = (channel: BuyerChannel) =>
  chain.client.readContract({ address: escrow, abi: sessionEscrowAbi, functionName: 'getChannel', args: [channel.channelId] });

describe('evm session buyer client on anvil', () => {
  it('opens directly (approve + open → hash credential), signs vouchers the payee settles, and closes at spent', async () => {
    const buyer = client(payer);
    const payerStart = await balance(payer.address);
    const payeeStart = await balance(payee.address);
    const { channel, payload, source } = await buyer.openDirect(request, { deposit: 1_000n });
    const checked = checkEvmSession(challenge(), payload, source, await now());
    expect(checked).toMatchObject({ ok: true, value: { checked: { action: 'open', type: 'hash', channelId: channel.channelId } } });
    const tx = await chain.client.getTransactionReceipt({ hash: payload.hash });
    expect(parseEventLogs({ abi: sessionEscrowAbi, logs: tx.logs, eventName: 'ChannelOpened' })[0]!.args.channelId).toBe(channel.channelId);
    expect(await onChain(channel)).toMatchObject({ payer: payer.address, payee: payee.address, deposit: 1_000n, settled: 0n });
    expect(
      await recoverTypedDataAddress({
        ...voucherTypedData(request.methodDetails as never, { channelId: channel.channelId, cumulativeAmount: 0n }),
        signature: payload.signature,
      }),
    ).toBe(payer.address);

    const v100 = await buyer.voucher(channel, 100n);
    const v300 = await buyer.voucher(channel, 300n);
    // cumulative: never signs below what it already signed
    expect((await buyer.voucher(channel, 200n)).cumulativeAmount).toBe('300');
    await asPayee('settle', [channel.channelId, 100n, v100.signature]);
    expect((await onChain(channel)).settled).toBe(100n);
    await expect(buyer.voucher(channel, 1_001n)).rejects.toThrow(/exceeds the deposit/);

    // the server accepted 300 but delivered 200: the close voucher is spent, not accepted
    const last = evmSessionReceipt({
      challengeId: 'c',
      channelId: channel.channelId,
      acceptedCumulative: 300n,
      spent: 200n,
      chainId: channel.chainId,
      timestamp: new Date(),
    });
    const close = await buyer.close(channel, last);
    expect(close).toMatchObject({ action: 'close', cumulativeAmount: '200' });
    expect(checkEvmSession(challenge(), close, undefined, await now()).ok).toBe(true);
    const closed = await asPayee('close', [channel.channelId, 200n, close.signature]);
    expect(parseEventLogs({ abi: sessionEscrowAbi, logs: closed.logs, eventName: 'ChannelClosed' })[0]!.args).toMatchObject({
      settledToPayee: 200n,
      refundedToPayer: 800n,
    });
    expect(await balance(payee.address)).toBe(payeeStart + 200n);
    expect(await balance(payer.address)).toBe(payerStart - 200n);
    expect(v300.cumulativeAmount).toBe('300');
  });

  it('opens and tops up by relayed EIP-3009 authorization, which the payee submits', async () => {
    const buyer = client(payer);
    const { channel, payload } = await buyer.openRelayed(request, { deposit: 500n });
    const checked = checkEvmSession(challenge(), payload, undefined, await now());
    if (!checked.ok || checked.value.checked.action !== 'open' || checked.value.checked.type !== 'authorization') throw new Error(JSON.stringify(checked));
    const d = checked.value.checked.deposit;
    await asPayee('openWithAuthorization', openWithAuthorizationArgs(d));
    expect(await onChain(channel)).toMatchObject({ payer: payer.address, deposit: 500n });

    const topUp = await buyer.topUpRelayed(channel, 250n);
    const checkedTopUp = checkEvmSession(challenge(), topUp, undefined, await now());
    if (!checkedTopUp.ok || checkedTopUp.value.checked.action !== 'topUp' || checkedTopUp.value.checked.type !== 'authorization')
      throw new Error(JSON.stringify(checkedTopUp));
    const t = checkedTopUp.value.checked.deposit;
    await asPayee('topUpWithAuthorization', [t.channelId, t.additionalDeposit, t.from, t.topUpSalt, t.validAfter, t.validBefore, t.nonce, t.signature]);
    expect((await onChain(channel)).deposit).toBe(750n);
    channel.deposit = 750n;
    const v = await buyer.voucher(channel, 600n);
    await asPayee('settle', [channel.channelId, 600n, v.signature]);
    expect((await onChain(channel)).settled).toBe(600n);
  });

  it('tops up directly (approve + topUp → hash credential)', async () => {
    const buyer = client(payer);
    const { channel } = await buyer.openDirect(request, { deposit: 100n });
    const topUp = await buyer.topUpDirect(channel, 50n);
    expect(topUp).toMatchObject({ action: 'topUp', type: 'hash', additionalDeposit: '50' });
    expect(checkEvmSession(challenge(), topUp, buyer.source(channel.chainId), await now()).ok).toBe(true);
    expect((await onChain(channel)).deposit).toBe(150n);
    expect(channel.deposit).toBe(150n);
  });

  it('delegates vouchers to an authorizedSigner', async () => {
    const buyer = client(payer, delegate);
    const { channel, payload } = await buyer.openDirect(request, { deposit: 100n });
    expect(payload.authorizedSigner).toBe(delegate.address);
    expect((await onChain(channel)).authorizedSigner).toBe(delegate.address);
    await asPayee('settle', [channel.channelId, 40n, (await buyer.voucher(channel, 40n)).signature]);
    expect((await onChain(channel)).settled).toBe(40n);
  });

  it('an ERC-1271 payer (the SmartWallet) opens by authorization and pays with vouchers its owner signs', async () => {
    const smartWallet = chain.manifest.contracts.smartWallet as Address;
    const buyer = new EvmSessionChannelClient(chain.client, { address: smartWallet, signer: walletOwner });
    await expect(buyer.openDirect(request, { deposit: 100n })).rejects.toThrow(SessionClientError);
    const { channel, payload } = await buyer.openRelayed(request, { deposit: 300n });
    const checked = checkEvmSession(challenge(), payload, undefined, await now());
    if (!checked.ok || checked.value.checked.action !== 'open' || checked.value.checked.type !== 'authorization') throw new Error(JSON.stringify(checked));
    const d = checked.value.checked.deposit;
    await asPayee('openWithAuthorization', openWithAuthorizationArgs(d));
    expect((await onChain(channel)).payer).toBe(smartWallet);
    await asPayee('settle', [channel.channelId, 120n, (await buyer.voucher(channel, 120n)).signature]);
    expect((await onChain(channel)).settled).toBe(120n);
  });

  it('forces a close: requestClose, CloseNotReady inside the grace period, withdraw after it', async () => {
    const buyer = client(payer);
    const { channel } = await buyer.openDirect(request, { deposit: 1_000n });
    await asPayee('settle', [channel.channelId, 150n, (await buyer.voucher(channel, 150n)).signature]);
    const { closeGraceEnd } = await buyer.requestClose(channel);
    expect(closeGraceEnd).toBe((await onChain(channel)).closeRequestedAt + 900n);
    const early = await buyer.withdraw(channel).catch((error: unknown) => error);
    expect(early).toBeInstanceOf(SessionClientError);
    expect((early as SessionClientError).revert).toBe('CloseNotReady');
    // the payee may still settle during the grace period
    await asPayee('settle', [channel.channelId, 250n, (await buyer.voucher(channel, 250n)).signature]);
    await chain.increaseTime(900);
    const before = await balance(payer.address);
    expect(await buyer.withdraw(channel)).toMatchObject({ settledToPayee: 250n, refundedToPayer: 750n });
    expect(await balance(payer.address)).toBe(before + 750n);
    expect((await onChain(channel)).finalized).toBe(true);
  });
});
