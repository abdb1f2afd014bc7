import { Injectable, Logger } from '@nestjs/common';
import {
  encodeFunctionData,
  getAddress,
  hashTypedData,
  isAddressEqual,
  parseErc6492Signature,
  parseEventLogs,
  parseSignature,
  type Address,
  type Hex,
  type TransactionReceipt,
} from 'viem';
import { eip3009Abi, eip3009Types, erc1271Abi, ERC1271_MAGIC_VALUE, ERC6492_MAGIC_SUFFIX, isTransportFailure, recoverSigner, revertReason, type AssetConfig, type ContractCall } from '@mp/chain';
import { ProblemError } from '@mp/platform';
import {
  deepEqual,
  exactEvmEip3009PayloadSchema,
  issuesOf,
  X402Reason,
  type PaymentRequest,
  type VerifyResponse,
} from '@mp/x402';
import { NetworkRegistry, type Network } from '../../networks/network-registry';
import { Clock } from '../clock';

/** A request that names a network, asset and scheme we serve, with its EIP-3009 payload decoded. */
export interface ExactEvmPayment {
  request: PaymentRequest;
  network: Network;
  asset: AssetConfig;
  payer: Address;
  signature: Hex;
  authorization: { from: Address; to: Address; value: bigint; validAfter: bigint; validBefore: bigint; nonce: Hex };
  /** The uniqueness key of a settlement: one authorization nonce of one payer on one token. */
  key: { network: string; asset: string; payer: string; nonce: string };
}

export type Resolution = { ok: true; payment: ExactEvmPayment } | { ok: false; response: VerifyResponse };

export class VerificationUnavailableError extends Error {
  constructor(cause: unknown) {
    super(`the chain could not be reached: ${revertReason(cause) ?? String(cause)}`);
    this.name = 'VerificationUnavailableError';
  }
}

/** validBefore must leave this much time for the settlement to land (as the reference facilitator requires). */
const VALID_BEFORE_MARGIN_SECONDS = 6n;
const ASSET_CODE_NEGATIVE_TTL_MS = 60_000;

/**
 * x402 `exact` on EVM with EIP-3009 (transferWithAuthorization). Runs every check the reference facilitator
 * runs, with the same reason strings, but recovers EOA signatures natively and spends one RPC round trip
 * (the simulation) per valid payment.
 */
@Injectable()
export class ExactEvmScheme {
  readonly scheme = 'exact';
  private readonly logger = new Logger(ExactEvmScheme.name);
  private readonly assetHasCode = new Map<string, number | true>();

  constructor(
    private readonly networks: NetworkRegistry,
    private readonly clock: Clock,
  ) {}

  /** Checks that need no chain: scheme, network, asset allowlist, payload shape. Malformed payloads throw a 400. */
  resolve(request: PaymentRequest): Resolution {
    const parsed = exactEvmEip3009PayloadSchema.safeParse(request.payload);
    if (!parsed.success) {
      if (request.payload && typeof request.payload === 'object' && 'permit2Authorization' in request.payload) {
        return invalid(X402Reason.unsupportedPayloadType, 'Permit2 payloads are not accepted by this facilitator yet; sign an EIP-3009 authorization');
      }
      throw new ProblemError('validation_failed', 'the exact EVM payload is malformed', {
        invalidParams: issuesOf(parsed.error, 'paymentPayload.payload').map((i) => ({ name: i.field, reason: i.message })),
      });
    }
    const { authorization, signature } = parsed.data;
    const payer = getAddress(authorization.from);
    const fail = (reason: string, message: string) => invalid(reason, message, payer);

    if (request.scheme !== this.scheme) return fail(X402Reason.unsupportedScheme, `scheme "${request.scheme}" is not supported; use "exact"`);
    const network = this.networks.resolve(request.network, request.x402Version);
    if (!network) return fail(X402Reason.invalidNetwork, `network "${request.network}" is not served by this facilitator`);
    if (request.payloadScheme !== this.scheme) return fail(X402Reason.exactEvmScheme, `the payload is for scheme "${request.payloadScheme}", the requirements for "exact"`);
    const name = request.extra.name;
    const version = request.extra.version;
    if (typeof name !== 'string' || typeof version !== 'string' || !name || !version) {
      return fail(X402Reason.exactEvmMissingEip712Domain, 'paymentRequirements.extra must carry the token\'s EIP-712 domain as {name, version}');
    }
    if (this.networks.resolve(request.payloadNetwork, request.x402Version)?.config.network !== network.config.network) {
      return fail(X402Reason.exactEvmNetworkMismatch, `the payload is for network "${request.payloadNetwork}", the requirements for "${request.network}"`);
    }
    const asset = this.networks.asset(network, request.asset);
    if (!asset) return fail(X402Reason.invalidPaymentRequirements, `asset ${request.asset} is not accepted on ${network.config.network}`);
    if (request.accepted) {
      const { accepted } = request;
      const requirements = { scheme: request.scheme, network: request.network, amount: request.amount, asset: request.asset, payTo: request.payTo, maxTimeoutSeconds: request.maxTimeoutSeconds, extra: request.extra };
      const differing = (Object.keys(requirements) as (keyof typeof requirements)[]).filter((k) => !deepEqual(accepted[k] ?? (k === 'extra' ? {} : undefined), requirements[k]));
      if (differing.length) {
        return fail(X402Reason.invalidPaymentRequirements, `paymentPayload.accepted differs from paymentRequirements in: ${differing.join(', ')}`);
      }
    }
    const payment: ExactEvmPayment = {
      request,
      network,
      asset,
      payer,
      signature: signature as Hex,
      authorization: {
        from: payer,
        to: getAddress(authorization.to),
        value: BigInt(authorization.value),
        validAfter: BigInt(authorization.validAfter),
        validBefore: BigInt(authorization.validBefore),
        nonce: authorization.nonce.toLowerCase() as Hex,
      },
      key: {
        network: network.config.network,
        asset: asset.address.toLowerCase(),
        payer: payer.toLowerCase(),
        nonce: authorization.nonce.toLowerCase(),
      },
    };
    return { ok: true, payment };
  }

  /**
   * The chain-facing checks, in the reference's order. `simulate: false` skips the eth_call (settlement
   * estimates gas instead, which simulates the same call). RPC failures throw VerificationUnavailableError.
   */
  async verify(payment: ExactEvmPayment, options: { simulate: boolean }): Promise<VerifyResponse> {
    const { authorization, payer, request, asset } = payment;
    const fail = (reason: string, message: string): VerifyResponse => ({ isValid: false, invalidReason: reason, invalidMessage: message, payer });
    const assetCheck = this.assetIsContract(payment);
    assetCheck.catch(() => undefined);

    const signature = await this.checkSignature(payment);
    if (signature !== true) return fail(signature.reason, signature.message);
    if (!isAddressEqual(authorization.to, safeAddress(request.payTo))) {
      return fail(X402Reason.exactEvmRecipientMismatch, `the authorization pays ${authorization.to}, the requirements ask for ${request.payTo}`);
    }
    const now = this.clock.nowSeconds();
    if (authorization.validBefore < now + VALID_BEFORE_MARGIN_SECONDS) {
      return fail(X402Reason.exactEvmValidBefore, `the authorization expires at ${authorization.validBefore}, too soon to settle (now ${now})`);
    }
    if (authorization.validAfter > now) {
      return fail(X402Reason.exactEvmValidAfter, `the authorization is valid only after ${authorization.validAfter} (now ${now})`);
    }
    if (authorization.value !== BigInt(request.amount)) {
      return fail(X402Reason.exactEvmValueMismatch, `the authorization is for ${authorization.value}, the requirements ask for exactly ${request.amount}`);
    }
    if (!(await assetCheck)) return fail(X402Reason.assetNotDeployedContract, `asset ${asset.address} has no contract code on ${payment.network.config.network}`);
    if (request.extra.name !== asset.eip712.name) {
      return fail(X402Reason.exactEvmTokenNameMismatch, `the token's EIP-712 name is "${asset.eip712.name}", the requirements say "${String(request.extra.name)}"`);
    }
    if (request.extra.version !== asset.eip712.version) {
      return fail(X402Reason.exactEvmTokenVersionMismatch, `the token's EIP-712 version is "${asset.eip712.version}", the requirements say "${String(request.extra.version)}"`);
    }
    if (options.simulate) {
      try {
        await payment.network.client.call({ to: asset.address, data: this.transferCalldata(payment) });
      } catch (error) {
        if (isTransportFailure(error)) throw new VerificationUnavailableError(error);
        return this.diagnose(payment, error);
      }
    }
    return { isValid: true, payer };
  }

  /** The settlement transaction, with its gas estimated from the signer that will send it (which simulates it). */
  async settlementCall(payment: ExactEvmPayment, from: Address): Promise<{ ok: true; call: ContractCall } | { ok: false; response: VerifyResponse }> {
    const data = this.transferCalldata(payment);
    try {
      const gas = await payment.network.client.estimateGas({ account: from, to: payment.asset.address, data });
      return { ok: true, call: { to: payment.asset.address, data, gas: (gas * 12n) / 10n + 5_000n } };
    } catch (error) {
      if (isTransportFailure(error)) throw new VerificationUnavailableError(error);
      return { ok: false, response: await this.diagnose(payment, error) };
    }
  }

  /** Judges a mined settlement: it must have succeeded and moved exactly the authorized amount. */
  judgeReceipt(payment: ExactEvmPayment, receipt: TransactionReceipt): { success: true } | { success: false; reason: string; message: string } {
    if (receipt.status !== 'success') {
      return { success: false, reason: X402Reason.exactEvmTransactionFailed, message: `transaction ${receipt.transactionHash} reverted` };
    }
    const transfers = parseEventLogs({ abi: eip3009Abi, eventName: 'Transfer', logs: receipt.logs.filter((l) => isAddressEqual(l.address, payment.asset.address)) });
    const { from, to, value } = payment.authorization;
    const matched = transfers.some((log) => {
      const args = log.args as { from: Address; to: Address; value: bigint };
      return isAddressEqual(args.from, from) && isAddressEqual(args.to, to) && args.value === value;
    });
    if (!matched) {
      return { success: false, reason: X402Reason.exactEvmTransferEventMismatch, message: `transaction ${receipt.transactionHash} has no Transfer of ${value} from ${from} to ${to}` };
    }
    return { success: true };
  }

  /** Maps an error from sending the settlement to a reason, as the reference does. */
  sendFailureReason(error: unknown): string {
    const message = error instanceof Error ? error.message : String(error);
    // The facilitator's own wallet cannot pay gas: our problem, never the payer's.
    if (/insufficient funds for (gas|intrinsic)|gas required exceeds allowance/i.test(message)) return X402Reason.unexpectedSettleError;
    if (/authorization.*(expired|valid before)|AuthorizationExpired/i.test(message)) return X402Reason.exactEvmValidBefore;
    if (/authorization.*not.*valid|AuthorizationNotYetValid/i.test(message)) return X402Reason.exactEvmValidAfter;
    if (/authorization.*used|AuthorizationAlreadyUsed|AuthorizationUsedOrCanceled/i.test(message)) return X402Reason.exactEvmNonceAlreadyUsed;
    if (/transfer.*exceeds.*balance|insufficient.*balance|ERC20InsufficientBalance/i.test(message)) return X402Reason.exactEvmInsufficientBalance;
    if (/invalid.*signature|SignerMismatch|InvalidSignatureV|InvalidSignatureS/i.test(message)) return X402Reason.exactEvmSignature;
    return X402Reason.exactEvmTransactionFailed;
  }

  settleNetworkName(payment: ExactEvmPayment): string {
    return payment.request.network;
  }

  private transferCalldata(payment: ExactEvmPayment): Hex {
    const { from, to, value, validAfter, validBefore, nonce } = payment.authorization;
    const signature = this.innerSignature(payment.signature);
    if (signature.length === 132) {
      const { r, s, v, yParity } = parseSignature(signature);
      return encodeFunctionData({
        abi: eip3009Abi,
        functionName: 'transferWithAuthorization',
        args: [from, to, value, validAfter, validBefore, nonce, Number(v ?? BigInt(yParity + 27)), r, s],
      });
    }
    return encodeFunctionData({ abi: eip3009Abi, functionName: 'transferWithAuthorization', args: [from, to, value, validAfter, validBefore, nonce, signature] });
  }

  private innerSignature(signature: Hex): Hex {
    return signature.endsWith(ERC6492_MAGIC_SUFFIX) ? parseErc6492Signature(signature).signature : signature;
  }

  private async checkSignature(payment: ExactEvmPayment): Promise<true | { reason: string; message: string }> {
    const { authorization, asset, request, network } = payment;
    let digest: Hex;
    try {
      digest = hashTypedData({
        domain: { name: String(request.extra.name), version: String(request.extra.version), chainId: network.config.chainId, verifyingContract: asset.address },
        types: eip3009Types,
        primaryType: 'TransferWithAuthorization',
        message: authorization,
      });
    } catch {
      return { reason: X402Reason.exactEvmSignature, message: 'the authorization cannot be hashed as EIP-712 typed data' };
    }
    const bad = { reason: X402Reason.exactEvmSignature, message: `the signature is not ${authorization.from}'s over this authorization` };
    let signature = payment.signature;
    if (signature.endsWith(ERC6492_MAGIC_SUFFIX)) {
      let parsed;
      try {
        parsed = parseErc6492Signature(signature);
      } catch {
        return { reason: X402Reason.exactEvmFailedToParseSignature, message: 'the ERC-6492 signature wrapper cannot be decoded' };
      }
      if (!(await this.hasCode(network, authorization.from))) {
        return {
          reason: X402Reason.eip6492FactoryNotAllowed,
          message: `the payer's wallet is not deployed and its factory ${parsed.address ?? '(none)'} is not on this facilitator's allowlist`,
        };
      }
      signature = parsed.signature;
    }
    const recovered = recoverSigner(digest, signature);
    if (recovered !== undefined && isAddressEqual(recovered, authorization.from)) return true;
    if (!(await this.hasCode(network, authorization.from))) return bad;
    try {
      const result = await network.client.readContract({ address: authorization.from, abi: erc1271Abi, functionName: 'isValidSignature', args: [digest, signature] });
      return String(result).toLowerCase() === ERC1271_MAGIC_VALUE ? true : bad;
    } catch (error) {
      if (isTransportFailure(error)) throw new VerificationUnavailableError(error);
      return bad;
    }
  }

  private async hasCode(network: Network, address: Address): Promise<boolean> {
    try {
      const code = await network.client.getCode({ address });
      return code !== undefined && code !== '0x';
    } catch (error) {
      throw new VerificationUnavailableError(error);
    }
  }

  /** Whether the asset has contract code; positive answers are cached for good, negative ones briefly. */
  private async assetIsContract(payment: ExactEvmPayment): Promise<boolean> {
    const key = `${payment.network.config.network}:${payment.asset.address}`;
    const cached = this.assetHasCode.get(key);
    if (cached === true) return true;
    if (cached !== undefined && this.clock.nowMs() - cached < ASSET_CODE_NEGATIVE_TTL_MS) return false;
    const deployed = await this.hasCode(payment.network, payment.asset.address);
    this.assetHasCode.set(key, deployed ? true : this.clock.nowMs());
    return deployed;
  }

  /** After a failed simulation: the reference's diagnosis (nonce used, EIP-3009 missing, balance), else simulation failed. */
  private async diagnose(payment: ExactEvmPayment, simulationError: unknown): Promise<VerifyResponse> {
    const { client } = payment.network;
    const { asset, authorization, payer } = payment;
    const detail = revertReason(simulationError);
    const fail = (reason: string, message: string): VerifyResponse => ({ isValid: false, invalidReason: reason, invalidMessage: detail ? `${message} (${detail})` : message, payer });
    const [state, balance] = await Promise.allSettled([
      client.readContract({ address: asset.address, abi: eip3009Abi, functionName: 'authorizationState', args: [authorization.from, authorization.nonce] }),
      client.readContract({ address: asset.address, abi: eip3009Abi, functionName: 'balanceOf', args: [authorization.from] }),
    ]);
    if (state.status === 'rejected') {
      if (isTransportFailure(state.reason)) throw new VerificationUnavailableError(state.reason);
      return fail(X402Reason.exactEvmEip3009NotSupported, `token ${asset.address} does not implement EIP-3009`);
    }
    if (state.value === true) return fail(X402Reason.exactEvmNonceAlreadyUsed, `authorization nonce ${authorization.nonce} of ${payer} is already used or canceled`);
    if (balance.status === 'fulfilled' && balance.value < authorization.value) {
      return fail(X402Reason.exactEvmInsufficientBalance, `${payer} holds ${balance.value} of ${asset.symbol}, less than ${authorization.value}`);
    }
    if (balance.status === 'rejected' && isTransportFailure(balance.reason)) throw new VerificationUnavailableError(balance.reason);
    this.logger.debug(`simulation failed for ${payer}: ${detail}`);
    return fail(X402Reason.exactEvmSimulationFailed, 'the transfer would revert');
  }
}

function invalid(reason: string, message: string, payer?: string): Resolution {
  return { ok: false, response: { isValid: false, invalidReason: reason, invalidMessage: message, ...(payer ? { payer } : {}) } };
}

function safeAddress(value: string): Address {
  try {
    return getAddress(value);
  } catch {
    return '0x0000000000000000000000000000000000000000';
  }
}
