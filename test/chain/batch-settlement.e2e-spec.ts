// Our x402 batch-settlement contracts on anvil, placed at the canonical addresses by the deploy script:
// deposits through the ERC-3009 collector, claims, settlement, timed withdrawals, refunds and their nonce rules,
// and an ERC-1271 payer. The spec runs on a chain of its own because it moves the clock past the withdraw delay.
import { receiveWithAuthorizationTypes } from '@mp/money';
import { randomBytes } from 'node:crypto';
import {
  BaseError,
  ContractFunctionRevertedError,
  createWalletClient,
  getAddress,
  http,
  parseAbi,
  parseEventLogs,
  toHex,
  zeroAddress,
  type Address,
  type Hex,
  type PrivateKeyAccount,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { batchSettlementAbi, eip3009Abi } from '@mp/chain';
import {
  BATCH_SETTLEMENT_ADDRESS,
  channelIdOf,
  claimBatchTypedData,
  contractChannelConfig,
  contractClaimRows,
  ERC3009_DEPOSIT_COLLECTOR_ADDRESS,
  erc3009CollectorData,
  erc3009DepositNonce,
  refundTypedData,
  voucherTypedData,
  type ChannelConfigWire,
  type ClaimRow,
} from '@mp/x402';
import { startOwnChain, type OwnChain } from '../support/own-chain';

const CHAIN_ID = 31_714;
const contract = { address: BATCH_SETTLEMENT_ADDRESS, abi: batchSettlementAbi } as const;

let chain: OwnChain;
let relayer: PrivateKeyAccount;
let receiver: PrivateKeyAccount;
let authorizer: PrivateKeyAccount;
let usdc: Address;

const acct = (k: { privateKey: string }) => privateKeyToAccount(k.privateKey as Hex);
const walletOf = (account: PrivateKeyAccount) =>
  createWalletClient({ account, chain: chain.client.chain, transport: http(chain.manifest.rpcUrl), pollingInterval: 50 });

beforeAll(async () => {
  chain = await startOwnChain(CHAIN_ID);
  const { accounts, tokens } = chain.manifest;
  relayer = acct(accounts.facilitatorSigners[0]);
  receiver = acct(accounts.merchant);
  authorizer = acct(accounts.facilitatorSigners[1]);
  usdc = tokens.usdc.address;
});
afterAll(() => chain?.stop());

function configFor(payer: Address, over: Partial<ChannelConfigWire> = {}): ChannelConfigWire {
  return {
    payer,
    payerAuthorizer: zeroAddress,
    receiver: receiver.address,
    receiverAuthorizer: authorizer.address,
    token: usdc,
    withdrawDelay: 900,
    salt: toHex(randomBytes(32)),
    ...over,
  };
}

async function send(account: PrivateKeyAccount, functionName: string, args: readonly unknown[]) {
  const wallet = walletOf(account);
  // simulate first so a revert surfaces as the contract's named error
  const { request } = await chain.client.simulateContract({ ...contract, account, functionName: functionName as never, args: args as never });
  const hash = await wallet.writeContract(request as never);
  const receipt = await chain.client.waitForTransactionReceipt({ hash, pollingInterval: 50 });
  expect(receipt.status).toBe('success');
  return { receipt, logs: parseEventLogs({ abi: batchSettlementAbi, logs: receipt.logs }) };
}

async function revertOf(account: PrivateKeyAccount, functionName: string, args: readonly unknown[]): Promise<string> {
  try {
    await chain.client.simulateContract({ ...contract, account, functionName: functionName as never, args: args as never });
  } catch (error) {
    const revert = error instanceof BaseError ? error.walk((e) => e instanceof ContractFunctionRevertedError) : undefined;
    if (revert instanceof ContractFunctionRevertedError) {
      // a token's revert string bubbles up through the collector as Error(string)
      return revert.data?.errorName === 'Error' ? `Error: ${String(revert.data.args?.[0])}` : (revert.data?.errorName ?? revert.reason ?? 'unknown');
    }
    throw error;
  }
  throw new Error(`${functionName} did not revert`);
}

const channelOf = async (id: Hex) => {
  const [balance, totalClaimed] = await chain.client.readContract({ ...contract, functionName: 'channels', args: [id] });
  return { balance, totalClaimed };
};
const refundNonceOf = (id: Hex) => chain.client.readContract({ ...contract, functionName: 'refundNonce', args: [id] });
const tokenBalance = (who: Address) => chain.client.readContract({ address: usdc, abi: eip3009Abi, functionName: 'balanceOf', args: [who] });

/** The payer (or its wallet's owner, for ERC-1271) signs; the relayer submits the deposit. */
async function depositArgs(signer: PrivateKeyAccount, config: ChannelConfigWire, amount: bigint) {
  const channelId = channelIdOf(config, CHAIN_ID);
  const salt = toHex(randomBytes(32));
  const validBefore = BigInt((await chain.now()) + 3600);
  const signature = await signer.signTypedData({
    domain: { name: chain.manifest.tokens.usdc.name, version: chain.manifest.tokens.usdc.version, chainId: CHAIN_ID, verifyingContract: usdc },
    types: receiveWithAuthorizationTypes,
    primaryType: 'ReceiveWithAuthorization',
    message: {
      from: config.payer as Address,
      to: ERC3009_DEPOSIT_COLLECTOR_ADDRESS,
      value: amount,
      validAfter: 0n,
      validBefore,
      nonce: erc3009DepositNonce(channelId, salt),
    },
  });
  const collectorData = erc3009CollectorData({ validAfter: '0', validBefore: validBefore.toString(), salt, signature });
  return [contractChannelConfig(config), amount, ERC3009_DEPOSIT_COLLECTOR_ADDRESS, collectorData] as const;
}

async function claimRow(signer: PrivateKeyAccount, config: ChannelConfigWire, max: bigint, total: bigint): Promise<ClaimRow> {
  const signature = await signer.signTypedData(voucherTypedData(channelIdOf(config, CHAIN_ID), max, CHAIN_ID));
  return { voucher: { channel: config, maxClaimableAmount: max.toString() }, signature, totalClaimed: total.toString() };
}

describe('X402BatchSettlement on anvil', () => {
  it('sits at the canonical addresses with a domain bound to that address and this chain', async () => {
    for (const at of [BATCH_SETTLEMENT_ADDRESS, ERC3009_DEPOSIT_COLLECTOR_ADDRESS]) {
      expect((await chain.client.getCode({ address: at }))?.length).toBeGreaterThan(2);
    }
    expect(chain.manifest.contracts.batchSettlement).toBe(BATCH_SETTLEMENT_ADDRESS);
    const config = configFor(acct(chain.manifest.accounts.payers[0]).address);
    const onChain = await chain.client.readContract({ ...contract, functionName: 'getChannelId', args: [contractChannelConfig(config)] });
    expect(onChain).toBe(channelIdOf(config, CHAIN_ID));
    const collectorTarget = await chain.client.readContract({
      address: ERC3009_DEPOSIT_COLLECTOR_ADDRESS,
      abi: [{ type: 'function', name: 'batchSettlement', stateMutability: 'view', inputs: [], outputs: [{ type: 'address' }] }] as const,
      functionName: 'batchSettlement',
    });
    expect(collectorTarget).toBe(BATCH_SETTLEMENT_ADDRESS);
  });

  it('takes a deposit through the ERC-3009 collector, claims, claims with a signature, and settles', async () => {
    const payer = acct(chain.manifest.accounts.payers[0]);
    const config = configFor(payer.address);
    const id = channelIdOf(config, CHAIN_ID);
    const payerBefore = await tokenBalance(payer.address);

    const deposited = await send(relayer, 'deposit', await depositArgs(payer, config, 1_000_000n));
    expect(deposited.logs.map((l) => l.eventName)).toEqual(['ChannelCreated', 'Deposited']);
    expect(await channelOf(id)).toEqual({ balance: 1_000_000n, totalClaimed: 0n });
    expect(await tokenBalance(payer.address)).toBe(payerBefore - 1_000_000n);
    expect(await tokenBalance(BATCH_SETTLEMENT_ADDRESS)).toBeGreaterThanOrEqual(1_000_000n);

    // the receiver claims 300k of a 400k voucher directly
    const first = await send(receiver, 'claim', [contractClaimRows([await claimRow(payer, config, 400_000n, 300_000n)])]);
    expect(first.logs[0]).toMatchObject({ eventName: 'Claimed', args: { claimAmount: 300_000n, newTotalClaimed: 300_000n } });
    // someone else may not
    expect(await revertOf(relayer, 'claim', [contractClaimRows([await claimRow(payer, config, 400_000n, 350_000n)])])).toBe('NotAuthorizedToClaim');

    // a relayer claims with the receiverAuthorizer's signature over the batch
    const rows = [await claimRow(payer, config, 600_000n, 600_000n)];
    const batchSig = await authorizer.signTypedData(claimBatchTypedData(rows, CHAIN_ID));
    const second = await send(relayer, 'claimWithSignature', [contractClaimRows(rows), batchSig]);
    expect(second.logs[0]).toMatchObject({ eventName: 'Claimed', args: { claimAmount: 300_000n, newTotalClaimed: 600_000n } });
    expect(await revertOf(relayer, 'claimWithSignature', [contractClaimRows(rows), await payer.signTypedData(claimBatchTypedData(rows, CHAIN_ID))])).toBe(
      'InvalidSignature',
    );
    // replaying an applied row is a no-op
    const replay = await send(relayer, 'claimWithSignature', [contractClaimRows(rows), batchSig]);
    expect(replay.logs).toEqual([]);

    const receiverBefore = await tokenBalance(receiver.address);
    const settled = await send(relayer, 'settle', [receiver.address, usdc]);
    expect(settled.logs[0]).toMatchObject({ eventName: 'Settled', args: { receiver: getAddress(receiver.address), amount: 600_000n } });
    expect(await tokenBalance(receiver.address)).toBe(receiverBefore + 600_000n);
    expect((await send(relayer, 'settle', [receiver.address, usdc])).logs).toEqual([]);
    const [totalClaimed, totalSettled] = await chain.client.readContract({ ...contract, functionName: 'receivers', args: [receiver.address, usdc] });
    expect(totalSettled).toBe(totalClaimed);
  });

  it('refuses claims above the voucher ceiling, above the escrow, or signed by someone else', async () => {
    const payer = acct(chain.manifest.accounts.payers[1]);
    const config = configFor(payer.address);
    await send(relayer, 'deposit', await depositArgs(payer, config, 500_000n));
    expect(await revertOf(receiver, 'claim', [contractClaimRows([await claimRow(payer, config, 100_000n, 100_001n)])])).toBe('ClaimExceedsCeiling');
    expect(await revertOf(receiver, 'claim', [contractClaimRows([await claimRow(payer, config, 900_000n, 500_001n)])])).toBe('ClaimExceedsBalance');
    expect(await revertOf(receiver, 'claim', [contractClaimRows([await claimRow(relayer, config, 100_000n, 100_000n)])])).toBe('InvalidSignature');
    expect(await revertOf(receiver, 'claim', [[]])).toBe('EmptyBatch');
    // a payerAuthorizer, when set, is the only voucher signer
    const delegate = acct(chain.manifest.accounts.payers[2]);
    const delegated = configFor(payer.address, { payerAuthorizer: delegate.address });
    await send(relayer, 'deposit', await depositArgs(payer, delegated, 200_000n));
    expect(await revertOf(receiver, 'claim', [contractClaimRows([await claimRow(payer, delegated, 100_000n, 100_000n)])])).toBe('InvalidSignature');
    await send(receiver, 'claim', [contractClaimRows([await claimRow(delegate, delegated, 100_000n, 100_000n)])]);
    expect((await channelOf(channelIdOf(delegated, CHAIN_ID))).totalClaimed).toBe(100_000n);
  });

  it('rejects bad deposits', async () => {
    const payer = acct(chain.manifest.accounts.payers[3]);
    const config = configFor(payer.address);
    const args = await depositArgs(payer, config, 100_000n);
    expect(await revertOf(relayer, 'deposit', [args[0], 0n, args[2], args[3]])).toBe('ZeroDeposit');
    expect(await revertOf(relayer, 'deposit', [contractChannelConfig({ ...config, withdrawDelay: 899 }), ...args.slice(1)])).toBe('WithdrawDelayOutOfRange');
    expect(await revertOf(relayer, 'deposit', [contractChannelConfig({ ...config, receiverAuthorizer: zeroAddress }), ...args.slice(1)])).toBe(
      'InvalidChannel',
    );
    expect(await revertOf(relayer, 'deposit', [args[0], args[1], zeroAddress, args[3]])).toBe('InvalidCollector');
    // the signature binds the channel: the same authorization for another channel fails in the token
    await expect(revertOf(relayer, 'deposit', [contractChannelConfig({ ...config, salt: toHex(randomBytes(32)) }), ...args.slice(1)])).resolves.toBe(
      'Error: FiatTokenV2: invalid signature',
    );
    // only the settlement contract may drive the collector
    await expect(
      chain.client.simulateContract({
        account: relayer,
        address: ERC3009_DEPOSIT_COLLECTOR_ADDRESS,
        abi: parseAbi(['function collect(address, address, uint256, bytes32, bytes)', 'error OnlyBatchSettlement()']),
        functionName: 'collect',
        args: [payer.address, usdc, 1n, channelIdOf(config, CHAIN_ID), args[3]],
      }),
    ).rejects.toThrow(/OnlyBatchSettlement/);
  });

  it('refunds with nonce rules: a used signature never replays, zero reverts, an empty channel still moves the nonce', async () => {
    const payer = acct(chain.manifest.accounts.payers[4]);
    const config = configFor(payer.address);
    const id = channelIdOf(config, CHAIN_ID);
    await send(relayer, 'deposit', await depositArgs(payer, config, 400_000n));
    await send(receiver, 'claim', [contractClaimRows([await claimRow(payer, config, 100_000n, 100_000n)])]);

    const before = await tokenBalance(payer.address);
    const sig0 = await authorizer.signTypedData(refundTypedData(id, 0n, 50_000n, CHAIN_ID));
    const refunded = await send(relayer, 'refundWithSignature', [contractChannelConfig(config), 50_000n, 0n, sig0]);
    expect(refunded.logs[0]).toMatchObject({ eventName: 'Refunded', args: { amount: 50_000n } });
    expect(await tokenBalance(payer.address)).toBe(before + 50_000n);
    expect(await refundNonceOf(id)).toBe(1n);
    expect(await revertOf(relayer, 'refundWithSignature', [contractChannelConfig(config), 50_000n, 0n, sig0])).toBe('InvalidRefundNonce');
    const badSig = await relayer.signTypedData(refundTypedData(id, 1n, 50_000n, CHAIN_ID));
    expect(await revertOf(relayer, 'refundWithSignature', [contractChannelConfig(config), 50_000n, 1n, badSig])).toBe('InvalidSignature');
    expect(await revertOf(receiver, 'refund', [contractChannelConfig(config), 0n])).toBe('ZeroRefund');
    expect(await revertOf(relayer, 'refund', [contractChannelConfig(config), 1n])).toBe('NotAuthorizedToRefund');

    // a direct refund caps at the unclaimed escrow (250k) and moves the nonce
    const capped = await send(receiver, 'refund', [contractChannelConfig(config), 10_000_000n]);
    expect(capped.logs[0]).toMatchObject({ eventName: 'Refunded', args: { amount: 250_000n } });
    expect(await channelOf(id)).toEqual({ balance: 100_000n, totalClaimed: 100_000n });
    expect(await refundNonceOf(id)).toBe(2n);
    // nothing left: no transfer, no event, but the nonce still moves
    const empty = await send(authorizer, 'refund', [contractChannelConfig(config), 1n]);
    expect(empty.logs).toEqual([]);
    expect(await refundNonceOf(id)).toBe(3n);
  });

  it('lets the payer withdraw after the delay, capped at the unclaimed escrow, and a refund shrinks a pending withdrawal', async () => {
    const payer = acct(chain.manifest.accounts.payers[5]);
    const config = configFor(payer.address);
    const id = channelIdOf(config, CHAIN_ID);
    await send(relayer, 'deposit', await depositArgs(payer, config, 300_000n));
    expect(await revertOf(payer, 'initiateWithdraw', [contractChannelConfig(config), 300_001n])).toBe('WithdrawAmountExceedsAvailable');
    expect(await revertOf(relayer, 'initiateWithdraw', [contractChannelConfig(config), 1n])).toBe('InvalidChannel');
    expect(await revertOf(payer, 'finalizeWithdraw', [contractChannelConfig(config)])).toBe('WithdrawalNotPending');

    const started = await send(payer, 'initiateWithdraw', [contractChannelConfig(config), 250_000n]);
    expect(started.logs[0]).toMatchObject({ eventName: 'WithdrawInitiated', args: { amount: 250_000n } });
    expect(await revertOf(payer, 'initiateWithdraw', [contractChannelConfig(config), 1n])).toBe('WithdrawalAlreadyPending');
    expect(await revertOf(payer, 'finalizeWithdraw', [contractChannelConfig(config)])).toBe('WithdrawDelayNotElapsed');

    // during the window the receiver claims 100k and refunds 20k: the pending 250k shrinks to 230k
    await send(receiver, 'claim', [contractClaimRows([await claimRow(payer, config, 100_000n, 100_000n)])]);
    await send(receiver, 'refund', [contractChannelConfig(config), 20_000n]);
    const [pendingAmount] = await chain.client.readContract({ ...contract, functionName: 'pendingWithdrawals', args: [id] });
    expect(pendingAmount).toBe(230_000n);

    await chain.increaseTime(901);
    const before = await tokenBalance(payer.address);
    const finalized = await send(payer, 'finalizeWithdraw', [contractChannelConfig(config)]);
    // 300k − 20k refunded − 100k claimed = 180k unclaimed: the 230k request is capped there
    expect(finalized.logs[0]).toMatchObject({ eventName: 'WithdrawFinalized', args: { amount: 180_000n } });
    expect(await tokenBalance(payer.address)).toBe(before + 180_000n);
    expect(await channelOf(id)).toEqual({ balance: 100_000n, totalClaimed: 100_000n });
    expect(await revertOf(receiver, 'claim', [contractClaimRows([await claimRow(payer, config, 200_000n, 150_000n)])])).toBe('ClaimExceedsBalance');
  });

  it('accepts an ERC-1271 smart wallet as the payer, for the deposit and the vouchers', async () => {
    const owner = acct(chain.manifest.accounts.smartWalletOwner);
    const wallet = chain.manifest.contracts.smartWallet;
    const config = configFor(wallet);
    const id = channelIdOf(config, CHAIN_ID);
    await send(relayer, 'deposit', await depositArgs(owner, config, 200_000n));
    expect((await channelOf(id)).balance).toBe(200_000n);
    await send(receiver, 'claim', [contractClaimRows([await claimRow(owner, config, 150_000n, 150_000n)])]);
    expect((await channelOf(id)).totalClaimed).toBe(150_000n);
    expect(await revertOf(receiver, 'claim', [contractClaimRows([await claimRow(relayer, config, 180_000n, 180_000n)])])).toBe('InvalidSignature');
  });

  it('batches a claim and a signed refund in one multicall', async () => {
    const payer = acct(chain.manifest.accounts.payers[6]);
    const config = configFor(payer.address);
    const id = channelIdOf(config, CHAIN_ID);
    await send(relayer, 'deposit', await depositArgs(payer, config, 100_000n));
    const rows = [await claimRow(payer, config, 40_000n, 40_000n)];
    const { encodeFunctionData } = await import('viem');
    const calls = [
      encodeFunctionData({
        abi: batchSettlementAbi,
        functionName: 'claimWithSignature',
        args: [contractClaimRows(rows), await authorizer.signTypedData(claimBatchTypedData(rows, CHAIN_ID))],
      }),
      encodeFunctionData({
        abi: batchSettlementAbi,
        functionName: 'refundWithSignature',
        args: [contractChannelConfig(config), 60_000n, 0n, await authorizer.signTypedData(refundTypedData(id, 0n, 60_000n, CHAIN_ID))],
      }),
    ];
    const done = await send(relayer, 'multicall', [calls]);
    expect(done.logs.map((l) => l.eventName)).toEqual(['Claimed', 'Refunded']);
    expect(await channelOf(id)).toEqual({ balance: 40_000n, totalClaimed: 40_000n });
  });
});
