import { receiveWithAuthorizationTypes } from '@mp/money';
import { Inject, Injectable, Logger } from '@nestjs/common';
import {
  decodeFunctionData,
  encodeFunctionData,
  erc20Abi,
  getAddress,
  isAddressEqual,
  parseEventLogs,
  recoverTypedDataAddress,
  zeroAddress,
  type AbiStateMutability,
  type Address,
  type ContractFunctionArgs,
  type ContractFunctionName,
  type Hex,
  type TransactionReceipt,
} from 'viem';
import { privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { batchSettlementAbi, isTransportFailure, MULTICALL3_ADDRESS } from '@mp/chain';
import { ProblemError } from '@mp/platform';
import {
  BATCH_SETTLEMENT_ADDRESS,
  BATCH_SETTLEMENT_SCHEME,
  BatchSettlementReason as R,
  channelConfigProblem,
  channelIdOf,
  channelStateExtra,
  claimBatchTypedData,
  contractChannelConfig,
  contractClaimRows,
  decodeBatchSettlementPayload,
  ERC3009_DEPOSIT_COLLECTOR_ADDRESS,
  erc3009CollectorData,
  erc3009DepositNonce,
  erc3009WindowProblem,
  refundTypedData,
  voucherStateProblem,
  voucherTypedData,
  type ChannelConfigWire,
  type ChannelState,
  type ClaimPayload,
  type DepositPayload,
  type PaymentRequest,
  type RefundPayload,
  type SettlePayload,
  type SettleResponse,
  type SignedVoucher,
  type SupportedKind,
  type VerifyResponse,
  type VoucherPayload,
  X402Reason,
  zeroTimeoutProblem,
} from '@mp/x402';
import { FACILITATOR_CONFIG, type FacilitatorConfig } from '../../../config/facilitator.config';
import { NetworkRegistry, type Network } from '../../../networks/network-registry';
import type { X402Scheme } from '../x402-scheme';
import { BatchOperations, type OperationKind } from './batch-operations';

/** The contract's settle() costs well under this; a fixed limit spares an estimate (as the reference facilitator does). */
export const SETTLE_GAS_LIMIT = 120_000n;

type Refusal = { reason: string; message: string };
type Verified = { ok: true; state: ChannelState; channelId: Hex } | ({ ok: false } & Refusal);

/**
 * x402 `batch-settlement` on EVM against our contracts at the canonical addresses: /verify checks deposits, vouchers
 * and refunds in the spec's order (chain reads through Multicall3), /settle sends deposit, claimWithSignature, settle,
 * or claim + refundWithSignature in one multicall, each exactly once (BatchOperations). With
 * BATCH_SETTLEMENT_AUTHORIZER_KEY the facilitator is the receiverAuthorizer: /supported names it and it signs the claim
 * batches and refunds servers send unsigned.
 */
@Injectable()
export class BatchSettlementEvmScheme implements X402Scheme {
  readonly scheme = BATCH_SETTLEMENT_SCHEME;
  private readonly logger = new Logger(BatchSettlementEvmScheme.name);
  private readonly authorizer?: PrivateKeyAccount;

  constructor(
    @Inject(FACILITATOR_CONFIG) private readonly config: FacilitatorConfig,
    private readonly networks: NetworkRegistry,
    private readonly operations: BatchOperations,
  ) {
    const key = config.batchSettlement?.authorizerKey;
    if (key) this.authorizer = privateKeyToAccount(key);
  }

  kinds(): SupportedKind[] {
    if (!this.config.batchSettlement) return [];
    const extra = this.authorizer ? { extra: { receiverAuthorizer: this.authorizer.address } } : {};
    return this.networks.all().map((n) => ({ x402Version: 2, scheme: BATCH_SETTLEMENT_SCHEME, network: n.config.network, ...extra }));
  }

  async verify(request: PaymentRequest): Promise<VerifyResponse> {
    const context = this.context(request);
    if ('refusal' in context) return refusedVerify(context.refusal);
    const { network, payload } = context;
    if (payload.type !== 'deposit' && payload.type !== 'voucher' && payload.type !== 'refund') {
      return refusedVerify({ reason: R.payloadType, message: `a ${payload.type} payload is settled, not verified` });
    }
    const payer = payload.channelConfig.payer;
    try {
      const verified = await this.verifyChannelPayload(request, network, payload);
      if (!verified.ok) return { isValid: false, invalidReason: verified.reason, invalidMessage: verified.message, payer };
      return { isValid: true, payer, extra: channelStateExtra(verified.channelId, verified.state) };
    } catch (error) {
      if (!isTransportFailure(error)) this.logger.error('batch-settlement verification failed', error instanceof Error ? error.stack : String(error));
      return { isValid: false, invalidReason: R.rpcReadFailed, invalidMessage: (error as Error).message.split('\n')[0], payer };
    }
  }

  async settle(request: PaymentRequest, merchantId: string | null): Promise<SettleResponse> {
    const context = this.context(request);
    if ('refusal' in context) return refusedSettle(context.refusal, request.network);
    const { network, payload } = context;
    const key = `${merchantId ?? ''}:${request.fingerprint}`;
    try {
      switch (payload.type) {
        case 'deposit':
          return await this.settleDeposit(request, network, payload, key);
        case 'claim':
          return await this.settleClaim(network, payload, key);
        case 'settle':
          return await this.settleReceiver(network, payload, key);
        case 'refund':
          return await this.settleRefund(network, payload, key);
        default:
          return refusedSettle({ reason: R.payloadType, message: 'a voucher is settled by a claim, not by itself' }, request.network);
      }
    } catch (error) {
      if (!isTransportFailure(error)) this.logger.error('batch-settlement settlement failed', error instanceof Error ? error.stack : String(error));
      return refusedSettle({ reason: R.rpcReadFailed, message: (error as Error).message.split('\n')[0] }, request.network);
    }
  }

  // ------------------------------------------------------------------ verify

  /** Steps 1–2 of the spec (scheme and network) and the payload's shape; a malformed payload is a 400. */
  private context(request: PaymentRequest): { network: Network; payload: AnyPayload } | { refusal: Refusal } {
    if (!this.config.batchSettlement) return { refusal: { reason: R.scheme, message: 'batch-settlement is not served by this facilitator' } };
    if (request.payloadScheme !== BATCH_SETTLEMENT_SCHEME) {
      return {
        refusal: { reason: R.scheme, message: `the payload is for scheme "${request.payloadScheme}", the requirements for "${BATCH_SETTLEMENT_SCHEME}"` },
      };
    }
    const network = this.networks.resolve(request.network, request.x402Version);
    if (!network || request.x402Version !== 2 || request.payloadNetwork !== request.network) {
      return { refusal: { reason: R.networkMismatch, message: `network "${request.payloadNetwork}" is not this facilitator's "${request.network}"` } };
    }
    const result = decodeBatchSettlementPayload(request.payload);
    if (!result.ok) {
      if (result.kind === 'invalid') return { refusal: { reason: result.reason, message: result.message } };
      throw new ProblemError('validation_failed', 'the batch-settlement payload is malformed', {
        invalidParams: result.issues.map((i) => ({ name: i.field, reason: i.message })),
      });
    }
    // a payer's deposit or voucher needs time; the receiver's own claims, settles and refunds come with 0 from @x402/evm
    const noTime = result.payload.type === 'deposit' || result.payload.type === 'voucher' ? zeroTimeoutProblem(request) : undefined;
    if (noTime) return { refusal: { reason: X402Reason.invalidPaymentRequirements, message: noTime } };
    return { network, payload: result.payload };
  }

  private async verifyChannelPayload(request: PaymentRequest, network: Network, payload: DepositPayload | VoucherPayload | RefundPayload): Promise<Verified> {
    const chainId = network.config.chainId;
    const config = payload.channelConfig;
    const channelId = payload.voucher.channelId as Hex;
    const configProblem = channelConfigProblem(config, channelId, request, chainId);
    if (configProblem) return { ok: false, ...configProblem };

    let depositAmount = 0n;
    if (payload.type === 'deposit') {
      const problem = await this.depositAuthorizationProblem(request, network, payload, channelId);
      if (problem) return { ok: false, ...problem };
      depositAmount = BigInt(payload.deposit.amount);
    }
    if (!(await this.voucherSigned(network, config, payload.voucher))) {
      return { ok: false, reason: R.voucherSignature, message: 'the voucher is not signed by the payer (or its payerAuthorizer)' };
    }
    const { state, payerBalance } = await this.readState(network, channelId, payload.type === 'deposit' ? (config.payer as Address) : undefined, config.token);
    if (payload.type === 'deposit' && payerBalance! < depositAmount) {
      return { ok: false, reason: R.insufficientBalance, message: `the payer holds ${payerBalance} of the ${depositAmount} it deposits` };
    }
    const stateProblem = voucherStateProblem(payload.type, BigInt(payload.voucher.maxClaimableAmount), state, depositAmount);
    if (stateProblem) return { ok: false, ...stateProblem };
    if (payload.type === 'deposit') {
      try {
        await network.client.simulateContract({
          address: BATCH_SETTLEMENT_ADDRESS,
          abi: batchSettlementAbi,
          functionName: 'deposit',
          args: depositArgs(payload),
          account: this.operations.sender?.address ?? zeroAddress,
        });
      } catch (error) {
        if (isTransportFailure(error)) throw error;
        return { ok: false, reason: R.depositSimulationFailed, message: (error as Error).message.split('\n')[0] };
      }
    }
    return { ok: true, state, channelId };
  }

  /** Step 7: the ERC-3009 ReceiveWithAuthorization to the collector, bound to the channel by its nonce. */
  private async depositAuthorizationProblem(request: PaymentRequest, network: Network, payload: DepositPayload, channelId: Hex): Promise<Refusal | undefined> {
    const auth = payload.deposit.authorization.erc3009Authorization;
    if (!auth || request.extra.assetTransferMethod === 'permit2') {
      return { reason: R.erc3009AuthorizationRequired, message: 'deposits need an erc3009Authorization (Permit2 deposits are not served yet)' };
    }
    const { name, version } = request.extra;
    if (typeof name !== 'string' || typeof version !== 'string' || !name || !version) {
      return { reason: R.missingEip712Domain, message: "paymentRequirements.extra must carry the token's EIP-712 domain as {name, version}" };
    }
    const window = erc3009WindowProblem(auth, Math.floor(Date.now() / 1000));
    if (window) return window;
    const signed = await network.client.verifyTypedData({
      address: getAddress(payload.channelConfig.payer),
      domain: { name, version, chainId: network.config.chainId, verifyingContract: getAddress(payload.channelConfig.token) },
      types: receiveWithAuthorizationTypes,
      primaryType: 'ReceiveWithAuthorization',
      message: {
        from: getAddress(payload.channelConfig.payer),
        to: ERC3009_DEPOSIT_COLLECTOR_ADDRESS,
        value: BigInt(payload.deposit.amount),
        validAfter: BigInt(auth.validAfter),
        validBefore: BigInt(auth.validBefore),
        nonce: erc3009DepositNonce(channelId, auth.salt),
      },
      signature: auth.signature as Hex,
    });
    return signed ? undefined : { reason: R.receiveAuthorizationSignature, message: 'the ReceiveWithAuthorization is not signed by the payer' };
  }

  /** Step 8: ECDSA against a non-zero payerAuthorizer, else the payer (EOA or ERC-1271), as the contract checks it. */
  private async voucherSigned(network: Network, config: ChannelConfigWire, voucher: SignedVoucher): Promise<boolean> {
    const typed = voucherTypedData(voucher.channelId as Hex, BigInt(voucher.maxClaimableAmount), network.config.chainId);
    try {
      if (!isAddressEqual(getAddress(config.payerAuthorizer), zeroAddress)) {
        return isAddressEqual(await recoverTypedDataAddress({ ...typed, signature: voucher.signature as Hex }), getAddress(config.payerAuthorizer));
      }
      return await network.client.verifyTypedData({ ...typed, address: getAddress(config.payer), signature: voucher.signature as Hex });
    } catch (error) {
      if (isTransportFailure(error)) throw error;
      return false;
    }
  }

  /** Channel, pending withdrawal and refund nonce (and the payer's token balance) in one Multicall3 read. */
  private async readState(network: Network, channelId: Hex, payer: Address | undefined, token: string, blockNumber?: bigint) {
    const contract = { address: BATCH_SETTLEMENT_ADDRESS, abi: batchSettlementAbi } as const;
    const [channel, pending, refundNonce, payerBalance] = await network.client.multicall({
      multicallAddress: MULTICALL3_ADDRESS,
      allowFailure: false,
      blockNumber,
      contracts: [
        { ...contract, functionName: 'channels', args: [channelId] },
        { ...contract, functionName: 'pendingWithdrawals', args: [channelId] },
        { ...contract, functionName: 'refundNonce', args: [channelId] },
        { address: getAddress(token), abi: erc20Abi, functionName: 'balanceOf', args: [payer ?? zeroAddress] },
      ],
    });
    const state: ChannelState = { balance: channel[0], totalClaimed: channel[1], withdrawRequestedAt: Number(pending[1]), refundNonce };
    return { state, payerBalance: payer ? payerBalance : undefined };
  }

  // ------------------------------------------------------------------ settle

  private async settleDeposit(request: PaymentRequest, network: Network, payload: DepositPayload, key: string): Promise<SettleResponse> {
    const payer = payload.channelConfig.payer;
    // a repeated request follows its operation: verifying again would fail on the authorization it already used
    if (!(await this.operations.existing(key))) {
      const verified = await this.verifyChannelPayload(request, network, payload);
      if (!verified.ok) return refusedSettle(verified, request.network, payer);
    }
    const data = encodeFunctionData({ abi: batchSettlementAbi, functionName: 'deposit', args: depositArgs(payload) });
    return this.operations.run({
      key,
      kind: 'deposit',
      network,
      to: BATCH_SETTLEMENT_ADDRESS,
      data,
      revertedReason: REVERTED_REASONS.deposit,
      payer,
      judge: this.judge('deposit', network, data),
    });
  }

  private async settleClaim(network: Network, payload: ClaimPayload, key: string): Promise<SettleResponse> {
    const signature = await this.authorizerSignature(payload.claimAuthorizerSignature, payload.claims, network);
    if ('refusal' in signature) return refusedSettle(signature.refusal, network.config.network);
    const data = encodeFunctionData({
      abi: batchSettlementAbi,
      functionName: 'claimWithSignature',
      args: [contractClaimRows(payload.claims), signature.claim],
    });
    return this.operations.run({
      key,
      kind: 'claim',
      network,
      to: BATCH_SETTLEMENT_ADDRESS,
      data,
      revertedReason: REVERTED_REASONS.claim,
      judge: this.judge('claim', network, data),
      done: this.done('claim', network, data),
    });
  }

  private async settleReceiver(network: Network, payload: SettlePayload, key: string): Promise<SettleResponse> {
    const receiver = getAddress(payload.receiver);
    const token = getAddress(payload.token);
    const [totalClaimed, totalSettled] = await network.client.readContract({
      address: BATCH_SETTLEMENT_ADDRESS,
      abi: batchSettlementAbi,
      functionName: 'receivers',
      args: [receiver, token],
    });
    // settle is asked again whenever claims accrued: the claimed total it sweeps up to is part of its identity
    const operationKey = `${key}:${totalClaimed}`;
    if (totalClaimed <= totalSettled && !(await this.operations.existing(operationKey))) {
      return refusedSettle({ reason: R.nothingToSettle, message: 'nothing is claimed and unsettled for this receiver and token' }, network.config.network);
    }
    const data = encodeFunctionData({ abi: batchSettlementAbi, functionName: 'settle', args: [receiver, token] });
    return this.operations.run({
      key: operationKey,
      kind: 'settle',
      network,
      to: BATCH_SETTLEMENT_ADDRESS,
      data,
      gas: SETTLE_GAS_LIMIT,
      revertedReason: REVERTED_REASONS.settle,
      judge: this.judge('settle', network, data),
      done: this.done('settle', network, data),
    });
  }

  private async settleRefund(network: Network, payload: RefundPayload, key: string): Promise<SettleResponse> {
    const payer = payload.channelConfig.payer;
    if (payload.amount === undefined || payload.refundNonce === undefined || payload.claims === undefined) {
      return refusedSettle(
        { reason: R.payloadType, message: 'a refund is settled with amount, refundNonce and claims (the resource server adds them)' },
        network.config.network,
        payer,
      );
    }
    const chainId = network.config.chainId;
    const channelId = channelIdOf(payload.channelConfig, chainId);
    const config = contractChannelConfig(payload.channelConfig);
    const amount = BigInt(payload.amount);
    const nonce = BigInt(payload.refundNonce);
    if (!(await this.operations.existing(key))) {
      const { state } = await this.readState(network, channelId, undefined, payload.channelConfig.token);
      const claimedAfter = payload.claims
        .filter((c) => channelIdOf(c.voucher.channel, chainId).toLowerCase() === channelId.toLowerCase())
        .reduce((max, c) => (BigInt(c.totalClaimed) > max ? BigInt(c.totalClaimed) : max), state.totalClaimed);
      if (amount === 0n || claimedAfter >= state.balance) {
        return refusedSettle({ reason: R.refundNoBalance, message: 'nothing is left to refund in the channel' }, network.config.network, payer);
      }
    }
    let refundSignature = payload.refundAuthorizerSignature as Hex | undefined;
    if (!refundSignature) {
      const refusal = this.authorizerRefusal([payload.channelConfig]);
      if (refusal) return refusedSettle(refusal, network.config.network, payer);
      refundSignature = await this.authorizer!.signTypedData(refundTypedData(channelId, nonce, amount, chainId));
    }
    const refundCall = encodeFunctionData({ abi: batchSettlementAbi, functionName: 'refundWithSignature', args: [config, amount, nonce, refundSignature] });
    let data = refundCall;
    if (payload.claims.length > 0) {
      const signature = await this.authorizerSignature(payload.claimAuthorizerSignature, payload.claims, network);
      if ('refusal' in signature) return refusedSettle(signature.refusal, network.config.network, payer);
      const claimCall = encodeFunctionData({
        abi: batchSettlementAbi,
        functionName: 'claimWithSignature',
        args: [contractClaimRows(payload.claims), signature.claim],
      });
      data = encodeFunctionData({ abi: batchSettlementAbi, functionName: 'multicall', args: [[claimCall, refundCall]] });
    }
    return this.operations.run({
      key,
      kind: 'refund',
      network,
      to: BATCH_SETTLEMENT_ADDRESS,
      data,
      revertedReason: REVERTED_REASONS.refund,
      payer,
      judge: this.judge('refund', network, data),
    });
  }

  /**
   * The answer a mined receipt gives the operation whose calldata is `data`: taken from the calldata alone (not the
   * request), so /settle and the pending-operation finisher, which has only the recorded row, answer alike.
   */
  judge(kind: OperationKind, network: Network, data: Hex): (receipt: TransactionReceipt) => Promise<SettleResponse> {
    const at = network.config.network;
    const failed = (receipt: TransactionReceipt, payer?: string) => failedTransaction(FAILED_REASONS[kind], receipt, network, payer);
    switch (kind) {
      case 'claim':
        return async (receipt) => (receipt.status === 'success' ? { success: true, transaction: receipt.transactionHash, network: at } : failed(receipt));
      case 'settle': {
        const [receiver, token] = decodeCall(data, 'settle');
        return async (receipt) => {
          if (receipt.status !== 'success') return failed(receipt);
          const settled = parseEventLogs({ abi: batchSettlementAbi, eventName: 'Settled', logs: receipt.logs }).find(
            (log) =>
              isAddressEqual(log.address, BATCH_SETTLEMENT_ADDRESS) && isAddressEqual(log.args.receiver, receiver) && isAddressEqual(log.args.token, token),
          );
          return { success: true, transaction: receipt.transactionHash, network: at, amount: (settled?.args.amount ?? 0n).toString() };
        };
      }
      case 'deposit': {
        const [config, amount] = decodeCall(data, 'deposit');
        const channelId = channelIdOf(config as ChannelConfigWire, network.config.chainId);
        return async (receipt) => {
          if (receipt.status !== 'success') return failed(receipt, config.payer);
          const { state } = await this.readState(network, channelId, undefined, config.token, receipt.blockNumber);
          return {
            success: true,
            transaction: receipt.transactionHash,
            network: at,
            payer: config.payer,
            amount: amount.toString(),
            extra: { channelState: channelStateExtra(channelId, state) },
          };
        };
      }
      case 'refund': {
        // claim + refund travel as one multicall; the refund call is its last
        const [config] = decodeCall(refundCallOf(data), 'refundWithSignature');
        const channelId = channelIdOf(config as ChannelConfigWire, network.config.chainId);
        return async (receipt) => {
          if (receipt.status !== 'success') return failed(receipt, config.payer);
          const refunded = parseEventLogs({ abi: batchSettlementAbi, eventName: 'Refunded', logs: receipt.logs }).find(
            (log) => isAddressEqual(log.address, BATCH_SETTLEMENT_ADDRESS) && log.args.channelId.toLowerCase() === channelId.toLowerCase(),
          );
          const { state } = await this.readState(network, channelId, undefined, config.token, receipt.blockNumber);
          return {
            success: true,
            transaction: receipt.transactionHash,
            network: at,
            payer: config.payer,
            amount: (refunded?.args.amount ?? 0n).toString(),
            extra: { channelState: channelStateExtra(channelId, state) },
          };
        };
      }
    }
  }

  /**
   * Whether the effect of the calldata `data` is already on chain, for the kinds whose repeat does not revert but does
   * nothing: every claimed total recorded (claim), nothing owed to the receiver (settle). A replacement of such a call
   * would succeed as a no-op (and a settle's would answer "paid 0" for what the first transaction paid), so it is not
   * sent. Deposit and refund repeat with a revert (a used authorization, a used refund nonce): undefined.
   */
  done(kind: OperationKind, network: Network, data: Hex): (() => Promise<boolean>) | undefined {
    const contract = { address: BATCH_SETTLEMENT_ADDRESS, abi: batchSettlementAbi } as const;
    switch (kind) {
      case 'claim': {
        const [rows] = decodeCall(data, 'claimWithSignature');
        return async () => {
          for (const row of rows) {
            const channelId = channelIdOf(row.voucher.channel as unknown as ChannelConfigWire, network.config.chainId);
            const [, totalClaimed] = await network.client.readContract({ ...contract, functionName: 'channels', args: [channelId] });
            if (totalClaimed < row.totalClaimed) return false;
          }
          return true;
        };
      }
      case 'settle': {
        const [receiver, token] = decodeCall(data, 'settle');
        return async () => {
          const [totalClaimed, totalSettled] = await network.client.readContract({ ...contract, functionName: 'receivers', args: [receiver, token] });
          return totalClaimed <= totalSettled;
        };
      }
      default:
        return undefined;
    }
  }

  /** The claim batch's receiverAuthorizer signature: the server's, or ours when every row names our authorizer. */
  private async authorizerSignature(
    given: string | undefined,
    claims: ClaimPayload['claims'],
    network: Network,
  ): Promise<{ claim: Hex } | { refusal: Refusal }> {
    if (given) return { claim: given as Hex };
    const refusal = this.authorizerRefusal(claims.map((c) => c.voucher.channel));
    if (refusal) return { refusal };
    return { claim: await this.authorizer!.signTypedData(claimBatchTypedData(claims, network.config.chainId)) };
  }

  private authorizerRefusal(channels: ChannelConfigWire[]): Refusal | undefined {
    if (!this.authorizer) {
      return { reason: R.authorizerNotConfigured, message: 'no authorizer signature was sent and this facilitator holds no receiverAuthorizer key' };
    }
    const foreign = channels.find((c) => !isAddressEqual(getAddress(c.receiverAuthorizer), this.authorizer!.address));
    return foreign
      ? {
          reason: R.authorizerAddressMismatch,
          message: `channel receiverAuthorizer ${foreign.receiverAuthorizer} is not this facilitator's ${this.authorizer.address}`,
        }
      : undefined;
  }
}

type AnyPayload = DepositPayload | VoucherPayload | RefundPayload | ClaimPayload | SettlePayload;

/** What a send that would revert is recorded with, per operation kind (nothing was sent). */
export const REVERTED_REASONS: Record<OperationKind, string> = {
  deposit: R.depositSimulationFailed,
  claim: R.claimSimulationFailed,
  settle: R.settleSimulationFailed,
  refund: R.refundSimulationFailed,
};

/** What a mined revert is answered with, per operation kind. */
const FAILED_REASONS: Record<OperationKind, string> = {
  deposit: R.depositTransactionFailed,
  claim: R.claimTransactionFailed,
  settle: R.settleTransactionFailed,
  refund: R.refundTransactionFailed,
};

type BatchFunction = ContractFunctionName<typeof batchSettlementAbi>;

/** The arguments of our own calldata for `functionName` (a row whose data says otherwise is a bug: it throws). */
function decodeCall<F extends BatchFunction>(data: Hex, functionName: F) {
  const call = decodeFunctionData({ abi: batchSettlementAbi, data });
  if (call.functionName !== functionName) throw new Error(`batch-settlement calldata is ${call.functionName}, not ${functionName}`);
  return call.args as unknown as ContractFunctionArgs<typeof batchSettlementAbi, AbiStateMutability, F>;
}

/** A refund operation's refundWithSignature call: the data itself, or the last call of its claim + refund multicall. */
function refundCallOf(data: Hex): Hex {
  const call = decodeFunctionData({ abi: batchSettlementAbi, data });
  return call.functionName === 'multicall' ? call.args[0].at(-1)! : data;
}

function depositArgs(payload: DepositPayload) {
  const auth = payload.deposit.authorization.erc3009Authorization!;
  return [contractChannelConfig(payload.channelConfig), BigInt(payload.deposit.amount), ERC3009_DEPOSIT_COLLECTOR_ADDRESS, erc3009CollectorData(auth)] as const;
}

function refusedVerify(refusal: Refusal): VerifyResponse {
  return { isValid: false, invalidReason: refusal.reason, invalidMessage: refusal.message };
}

function refusedSettle(refusal: Refusal, network: string, payer?: string): SettleResponse {
  return { success: false, errorReason: refusal.reason, errorMessage: refusal.message, transaction: '', network, ...(payer ? { payer } : {}) };
}

function failedTransaction(reason: string, receipt: TransactionReceipt, network: Network, payer?: string): SettleResponse {
  return {
    success: false,
    errorReason: reason,
    errorMessage: `transaction ${receipt.transactionHash} reverted`,
    transaction: receipt.transactionHash,
    network: network.config.network,
    ...(payer ? { payer } : {}),
  };
}
