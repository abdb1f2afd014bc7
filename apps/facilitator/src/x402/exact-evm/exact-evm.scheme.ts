import { Injectable, Logger } from '@nestjs/common';
import {
  decodeFunctionResult,
  encodeFunctionData,
  getAddress,
  hashTypedData,
  isAddressEqual,
  parseErc6492Signature,
  parseSignature,
  type Address,
  type Hex,
} from 'viem';
import {
  eip3009Abi,
  eip3009Types,
  erc1271Abi,
  ERC1271_MAGIC_VALUE,
  ERC6492_MAGIC_SUFFIX,
  isTransportFailure,
  MULTICALL3_ADDRESS,
  multicall3Abi,
  recoverSigner,
  revertReason,
  type AssetConfig,
  type ContractCall,
} from '@mp/chain';
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

/** The factory call of an ERC-6492 signature whose wallet is not deployed yet (a counterfactual payer). */
interface Eip6492Deployment {
  factory: Address;
  factoryCalldata: Hex;
}

type SignatureCheck = { ok: true; deployment?: Eip6492Deployment } | { ok: false; reason: string; message: string };

export type Resolution = { ok: true; payment: ExactEvmPayment } | { ok: false; response: VerifyResponse };

export class VerificationUnavailableError extends Error {
  constructor(cause: unknown) {
    super(`the chain could not be reached: ${revertReason(cause) ?? String(cause)}`);
    this.name = 'VerificationUnavailableError';
  }
}

/** Who took an authorization on chain: nobody yet, a transaction, or the payer's cancellation. */
export type AuthorizationUse = { used: false } | { used: true; canceled: boolean; transaction: Hex | undefined };

type AuthorizationEvent = Extract<(typeof eip3009Abi)[number], { type: 'event'; name: 'AuthorizationUsed' }>;

/** How far back a settlement's AuthorizationUsed log is looked for (RPC providers cap getLogs ranges near 10k). */
const AUTHORIZATION_LOG_LOOKBACK_BLOCKS = 9_000n;

/** validBefore must leave this much time for the settlement to land (as the reference facilitator requires). */
const VALID_BEFORE_MARGIN_SECONDS = 6n;
const CODE_NEGATIVE_TTL_MS = 60_000;
const ZERO_ADDRESS = '0x0000000000000000000000000000000000000000';

/**
 * x402 `exact` on EVM with EIP-3009 (transferWithAuthorization). Runs every check the reference facilitator
 * runs, with the same reason strings, but recovers EOA signatures natively and spends one RPC round trip
 * (the simulation) per valid payment.
 */
@Injectable()
export class ExactEvmScheme {
  readonly scheme = 'exact';
  private readonly logger = new Logger(ExactEvmScheme.name);
  /** `network:address` → true (has code, for good) or the time it was last seen without code. */
  private readonly contractCode = new Map<string, number | true>();

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
    if (!signature.ok) return fail(signature.reason, signature.message);
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
      // A counterfactual payer's signature has not been checked yet: the token checks it (ERC-1271 on the wallet
      // the factory call has just deployed) inside this simulation, as in the reference.
      const simulation = signature.deployment ? await this.simulateCounterfactual(payment, signature.deployment) : await this.simulateTransfer(payment);
      if (simulation !== true) return simulation;
    }
    return { isValid: true, payer };
  }

  /**
   * The settlement transaction, with its gas estimated from the signer that will send it (which simulates it). `gas`
   * is the raw estimate: the margin is added once, when a transaction is signed (settlementGasLimit).
   *
   * For a counterfactual ERC-6492 payer whose factory is allowed, it is ONE transaction to Multicall3
   * `aggregate3([factory call (allowFailure), transferWithAuthorization(bytes inner signature)])`. The reference
   * sends two (deploy, wait for its receipt, then transfer). One is better here:
   * - atomic: the wallet is deployed if and only if the payment lands, so we never pay for a deployment whose
   *   transfer then fails (balance moved, nonce used, authorization expired while we waited for the first receipt);
   * - it fits exactly-once settlement as it is: one claim, one nonce, one hash recorded before broadcast, one
   *   receipt to judge, so a crash or timeout between two transactions cannot leave half a settlement behind;
   * - one block of latency instead of two;
   * - the allowlisted factory is called by Multicall3, never with our hot wallet as msg.sender.
   * The factory call may fail (allowFailure) because someone else may deploy the wallet first; the transfer may
   * not, so the whole transaction reverts if the payment would.
   */
  async settlementCall(payment: ExactEvmPayment, from: Address): Promise<{ ok: true; call: ContractCall } | { ok: false; response: VerifyResponse }> {
    const counterfactual = await this.counterfactualDeployment(payment);
    if (counterfactual && !counterfactual.ok) return { ok: false, response: { isValid: false, invalidReason: counterfactual.reason, invalidMessage: counterfactual.message, payer: payment.payer } };
    const deployment = counterfactual?.deployment;
    if (deployment && !(await this.isContract(payment.network, MULTICALL3_ADDRESS))) {
      return { ok: false, response: this.noMulticall(payment) };
    }
    const to = deployment ? MULTICALL3_ADDRESS : payment.asset.address;
    const data = deployment ? this.counterfactualCalldata(payment, deployment) : this.transferCalldata(payment);
    try {
      const gas = await payment.network.client.estimateGas({ account: from, to, data });
      return { ok: true, call: { to, data, gas } };
    } catch (error) {
      if (isTransportFailure(error)) throw new VerificationUnavailableError(error);
      return { ok: false, response: await this.diagnose(payment, error) };
    }
  }

  /**
   * Whether the chain has used (or the payer canceled) an authorization, and by which transaction: the token's
   * `authorizationState`, then its AuthorizationUsed / AuthorizationCanceled log within the last
   * AUTHORIZATION_LOG_LOOKBACK_BLOCKS. `transaction` is undefined when the log is beyond that window (or this node
   * has not indexed it yet). Transport failures throw: an outcome is never guessed.
   */
  async authorizationUse(network: Network, asset: Address, authorizer: Address, nonce: Hex): Promise<AuthorizationUse> {
    const used = await network.client.readContract({ address: asset, abi: eip3009Abi, functionName: 'authorizationState', args: [authorizer, nonce] });
    if (!used) return { used: false };
    const head = await network.client.getBlockNumber();
    const fromBlock = head > AUTHORIZATION_LOG_LOOKBACK_BLOCKS ? head - AUTHORIZATION_LOG_LOOKBACK_BLOCKS : 0n;
    const query = (eventName: 'AuthorizationUsed' | 'AuthorizationCanceled') =>
      network.client.getLogs({ address: asset, event: eip3009Abi.find((e) => e.type === 'event' && e.name === eventName) as AuthorizationEvent, args: { authorizer, nonce }, fromBlock, toBlock: head });
    const [usedLogs, canceledLogs] = await Promise.all([query('AuthorizationUsed'), query('AuthorizationCanceled')]);
    if (canceledLogs.length > 0) return { used: true, canceled: true, transaction: canceledLogs[0].transactionHash ?? undefined };
    return { used: true, canceled: false, transaction: usedLogs[0]?.transactionHash ?? undefined };
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

  /** Multicall3 aggregate3: deploy the payer's wallet (may fail: already deployed), then the transfer (must not fail). */
  private counterfactualCalldata(payment: ExactEvmPayment, deployment: Eip6492Deployment): Hex {
    const { from, to, value, validAfter, validBefore, nonce } = payment.authorization;
    const transfer = encodeFunctionData({
      abi: eip3009Abi,
      functionName: 'transferWithAuthorization',
      args: [from, to, value, validAfter, validBefore, nonce, this.innerSignature(payment.signature)],
    });
    return encodeFunctionData({
      abi: multicall3Abi,
      functionName: 'aggregate3',
      args: [[
        { target: deployment.factory, allowFailure: true, callData: deployment.factoryCalldata },
        { target: payment.asset.address, allowFailure: false, callData: transfer },
      ]],
    });
  }

  private innerSignature(signature: Hex): Hex {
    return signature.endsWith(ERC6492_MAGIC_SUFFIX) ? parseErc6492Signature(signature).signature : signature;
  }

  /** One eth_call of the transfer itself. */
  private async simulateTransfer(payment: ExactEvmPayment): Promise<true | VerifyResponse> {
    try {
      await payment.network.client.call({ to: payment.asset.address, data: this.transferCalldata(payment) });
      return true;
    } catch (error) {
      if (isTransportFailure(error)) throw new VerificationUnavailableError(error);
      return this.diagnose(payment, error);
    }
  }

  /** One eth_call of the settlement a counterfactual payer gets: Multicall3 aggregate3 of factory call + transfer. */
  private async simulateCounterfactual(payment: ExactEvmPayment, deployment: Eip6492Deployment): Promise<true | VerifyResponse> {
    let data: Hex | undefined;
    try {
      ({ data } = await payment.network.client.call({ to: MULTICALL3_ADDRESS, data: this.counterfactualCalldata(payment, deployment) }));
    } catch (error) {
      if (isTransportFailure(error)) throw new VerificationUnavailableError(error);
      return this.diagnose(payment, error);
    }
    // A call to an address without code "succeeds" with no data: only a decoded aggregate3 answer counts.
    let results: readonly { success: boolean }[] | undefined;
    try {
      results = data ? decodeFunctionResult({ abi: multicall3Abi, functionName: 'aggregate3', data }) : undefined;
    } catch {
      results = undefined;
    }
    if (results?.length !== 2) return this.noMulticall(payment);
    return results[1].success ? true : this.diagnose(payment, new Error('the transfer failed inside Multicall3'));
  }

  private noMulticall(payment: ExactEvmPayment): VerifyResponse {
    return {
      isValid: false,
      invalidReason: X402Reason.exactEvmSimulationFailed,
      invalidMessage: `Multicall3 (${MULTICALL3_ADDRESS}) is not deployed on ${payment.network.config.network}, so a counterfactual wallet cannot be deployed and charged here`,
      payer: payment.payer,
    };
  }

  /**
   * For an ERC-6492-wrapped signature whose payer has no code: the factory call if the factory is allowed on this
   * network, else why not. Undefined when the signature is not wrapped or the wallet is already deployed (then the
   * wrapper is ignored and the inner signature is an ordinary ERC-1271 one).
   */
  private async counterfactualDeployment(payment: ExactEvmPayment): Promise<SignatureCheck | undefined> {
    if (!payment.signature.endsWith(ERC6492_MAGIC_SUFFIX)) return undefined;
    let parsed;
    try {
      parsed = parseErc6492Signature(payment.signature);
    } catch {
      return { ok: false, reason: X402Reason.exactEvmFailedToParseSignature, message: 'the ERC-6492 signature wrapper cannot be decoded' };
    }
    const { from } = payment.authorization;
    if (await this.hasCode(payment.network, from)) return undefined;
    const { address: factory, data: factoryCalldata } = parsed;
    if (!factory || !factoryCalldata || factoryCalldata === '0x' || isAddressEqual(factory, ZERO_ADDRESS)) {
      // As the reference: a wrapper without deployment data is no counterfactual signature, and no valid one either.
      return { ok: false, reason: X402Reason.exactEvmSignature, message: `the ERC-6492 wrapper names no factory call, and ${from} has no code` };
    }
    const allowed = payment.network.config.eip6492AllowedFactories.some((a) => a.toLowerCase() === factory.toLowerCase());
    if (!allowed) {
      return {
        ok: false,
        reason: X402Reason.eip6492FactoryNotAllowed,
        message: `the payer's wallet is not deployed and its factory ${factory} is not on this facilitator's allowlist for ${payment.network.config.network}`,
      };
    }
    return { ok: true, deployment: { factory: getAddress(factory), factoryCalldata } };
  }

  /**
   * EOA (native recovery), deployed contract wallet (ERC-1271, also when the signature is ERC-6492-wrapped), or
   * counterfactual wallet with an allowed factory: that signature is checked by the simulation, as in the reference.
   */
  private async checkSignature(payment: ExactEvmPayment): Promise<SignatureCheck> {
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
      return { ok: false, reason: X402Reason.exactEvmSignature, message: 'the authorization cannot be hashed as EIP-712 typed data' };
    }
    const bad: SignatureCheck = { ok: false, reason: X402Reason.exactEvmSignature, message: `the signature is not ${authorization.from}'s over this authorization` };
    const counterfactual = await this.counterfactualDeployment(payment);
    if (counterfactual) return counterfactual;
    const signature = this.innerSignature(payment.signature);
    const recovered = recoverSigner(digest, signature);
    if (recovered !== undefined && isAddressEqual(recovered, authorization.from)) return { ok: true };
    if (!(await this.hasCode(network, authorization.from))) return bad;
    try {
      const result = await network.client.readContract({ address: authorization.from, abi: erc1271Abi, functionName: 'isValidSignature', args: [digest, signature] });
      return String(result).toLowerCase() === ERC1271_MAGIC_VALUE ? { ok: true } : bad;
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

  /** Whether the asset has contract code. */
  private assetIsContract(payment: ExactEvmPayment): Promise<boolean> {
    return this.isContract(payment.network, payment.asset.address);
  }

  /** Whether an address has contract code; positive answers are cached for good, negative ones briefly. */
  private async isContract(network: Network, address: Address): Promise<boolean> {
    const key = `${network.config.network}:${address.toLowerCase()}`;
    const cached = this.contractCode.get(key);
    if (cached === true) return true;
    if (cached !== undefined && this.clock.nowMs() - cached < CODE_NEGATIVE_TTL_MS) return false;
    const deployed = await this.hasCode(network, address);
    this.contractCode.set(key, deployed ? true : this.clock.nowMs());
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
