import { Injectable, Logger } from '@nestjs/common';
import {
  decodeFunctionResult,
  encodeFunctionData,
  getAddress,
  isAddressEqual,
  parseErc6492Signature,
  type Address,
  type Hex,
  type TransactionReceipt,
} from 'viem';
import {
  eip3009Abi,
  transferWithAuthorizationDigest,
  erc1271Abi,
  ERC1271_MAGIC_VALUE,
  ERC6492_MAGIC_SUFFIX,
  isTransportFailure,
  MULTICALL3_ADDRESS,
  multicall3Abi,
  recoverSigner,
  revertReason,
  settlementGasLimit,
  transferWithAuthorizationCalldata,
  type AssetConfig,
  type ContractCall,
} from '@mp/chain';
import type { TransferAuthorization } from '@mp/money';
import { NetworkRegistry, type Network } from '../networks/network-registry';
import { Clock } from '../x402/clock';
import { judgeSettlementReceipt, sendFault, type ReceiptJudgement, type SettledTransfer } from './receipt-judgement';
import {
  ChainUnavailableError,
  type AuthorizationUse,
  type SettlementCallResult,
  type TransferAuthorizationRail,
  type TransferFault,
  type TransferVerdict,
} from './transfer-authorization.rail';

/** An authorization with the network and token it names, as configured here. */
interface EvmTransfer {
  authorization: TransferAuthorization;
  network: Network;
  asset: AssetConfig;
}

/** The factory call of an ERC-6492 signature whose wallet is not deployed yet (a counterfactual payer). */
interface Eip6492Deployment {
  factory: Address;
  factoryCalldata: Hex;
}

type Refusal = { ok: false; fault: TransferFault; message: string };
type SignatureCheck = { ok: true; deployment?: Eip6492Deployment } | Refusal;

type AuthorizationEvent = Extract<(typeof eip3009Abi)[number], { type: 'event'; name: 'AuthorizationUsed' }>;

/** How far back a settlement's AuthorizationUsed log is looked for (RPC providers cap getLogs ranges near 10k). */
const AUTHORIZATION_LOG_LOOKBACK_BLOCKS = 9_000n;

/** validBefore must leave this much time for the settlement to land (as the reference facilitator requires). */
const VALID_BEFORE_MARGIN_SECONDS = 6n;
const CODE_NEGATIVE_TTL_MS = 60_000;
/** What any transaction pays before its first opcode. */
const INTRINSIC_GAS = 21_000n;
const ZERO_ADDRESS = '0x0000000000000000000000000000000000000000';

/**
 * EIP-3009 (transferWithAuthorization) on EVM chains, for x402 `exact` and MPP `evm` alike. Runs every check the x402
 * reference facilitator runs, in its order, but recovers EOA signatures natively and spends one RPC round trip (the
 * simulation) per valid payment.
 */
@Injectable()
export class EvmTransferRail implements TransferAuthorizationRail {
  private readonly logger = new Logger(EvmTransferRail.name);
  /** Networks whose node answered that it has no eth_simulateV1 (asked once, then never again). */
  private readonly withoutSimulate = new Set<string>();
  /** `network:address` → true (has code, for good) or the time it was last seen without code. */
  private readonly contractCode = new Map<string, number | true>();

  constructor(
    private readonly networks: NetworkRegistry,
    private readonly clock: Clock,
  ) {}

  /**
   * The chain-facing checks, naming the reason the reference names (it checks the signature first). RPC failures throw
   * ChainUnavailableError. With `simulate`, the signature is checked last, and only if something else refuses the
   * payment: the token runs the same check inside the simulation (ECDSA recovery, or the payer wallet's ERC-1271), so a
   * transfer that simulates has a valid signature. This spares every valid payment its native recovery.
   */
  async verify(authorization: TransferAuthorization, options: { simulate: boolean }): Promise<TransferVerdict> {
    return this.verifyWith(authorization, { simulate: options.simulate, signatureOnRefusal: options.simulate });
  }

  /**
   * verify without its simulation, then settlementCall, whose simulation (the settlement call's own) runs the token's
   * signature check: ours runs only when something refuses the payment, so the reason is the one verify names.
   */
  async verifiedSettlementCall(authorization: TransferAuthorization): Promise<SettlementCallResult> {
    const verdict = await this.verifyWith(authorization, { simulate: false, signatureOnRefusal: true });
    if (!verdict.ok) return verdict;
    const call = await this.settlementCall(authorization);
    if (call.ok) return call;
    return (await this.signatureRefusal(authorization)) ?? call;
  }

  private async verifyWith(authorization: TransferAuthorization, options: { simulate: boolean; signatureOnRefusal: boolean }): Promise<TransferVerdict> {
    const transfer = this.resolve(authorization);
    if (!transfer.ok) return transfer;
    const { asset, network } = transfer.value;
    const { requirement, domain } = authorization;
    const assetCheck = this.isContract(network, asset.address);
    assetCheck.catch(() => undefined);

    // An ERC-6492 signature's deployment is needed for the simulation: checked first, as the reference does.
    const deferred = options.signatureOnRefusal && !authorization.signature.endsWith(ERC6492_MAGIC_SUFFIX);
    const signature = deferred ? undefined : await this.checkSignature(transfer.value);
    if (signature && !signature.ok) return signature;
    const fail = async (fault: TransferFault, message: string): Promise<TransferVerdict> =>
      (deferred && (await this.signatureRefusal(authorization))) || { ok: false, fault, message };
    if (!isAddressEqual(authorization.to, safeAddress(requirement.payTo))) {
      return fail('recipient_mismatch', `the authorization pays ${authorization.to}, the requirements ask for ${requirement.payTo}`);
    }
    const now = this.clock.nowSeconds();
    if (authorization.validBefore < now + VALID_BEFORE_MARGIN_SECONDS) {
      return fail('expires_too_soon', `the authorization expires at ${authorization.validBefore}, too soon to settle (now ${now})`);
    }
    if (authorization.validAfter > now) {
      return fail('not_yet_valid', `the authorization is valid only after ${authorization.validAfter} (now ${now})`);
    }
    if (authorization.value !== requirement.amount) {
      return fail('value_mismatch', `the authorization is for ${authorization.value}, the requirements ask for exactly ${requirement.amount}`);
    }
    if (!(await assetCheck)) return fail('asset_not_contract', `asset ${asset.address} has no contract code on ${network.config.network}`);
    if (domain.name !== asset.eip712.name) {
      return fail('token_name_mismatch', `the token's EIP-712 name is "${asset.eip712.name}", the requirements say "${domain.name}"`);
    }
    if (domain.version !== asset.eip712.version) {
      return fail('token_version_mismatch', `the token's EIP-712 version is "${asset.eip712.version}", the requirements say "${domain.version}"`);
    }
    if (options.simulate) {
      // A counterfactual payer's signature has not been checked yet: the token checks it (ERC-1271 on the wallet
      // the factory call has just deployed) inside this simulation, as in the reference.
      const simulation =
        signature?.ok && signature.deployment
          ? await this.simulateCounterfactual(transfer.value, signature.deployment)
          : await this.simulateTransfer(transfer.value);
      if (simulation !== true) return (deferred && (await this.signatureRefusal(authorization))) || simulation;
    }
    return { ok: true };
  }

  /** Why the signature is refused (checkSignature), or undefined when it holds. */
  private async signatureRefusal(authorization: TransferAuthorization): Promise<Refusal | undefined> {
    const transfer = this.resolve(authorization);
    if (!transfer.ok) return transfer;
    const signature = await this.checkSignature(transfer.value);
    return signature.ok ? undefined : signature;
  }

  /**
   * The settlement transaction, with its gas estimated from the signer that will send it (which simulates it). `gas`
   * is the raw estimate: the margin is added once, when a transaction is signed (settlementGasLimit, batchGasLimit).
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
  async settlementCall(authorization: TransferAuthorization): Promise<SettlementCallResult> {
    const resolved = this.resolve(authorization);
    if (!resolved.ok) return resolved;
    const transfer = resolved.value;
    const from = transfer.network.signers.signers[0]?.address;
    if (!from) return { ok: false, fault: 'facilitator_unable', message: `no signer is configured for ${transfer.network.config.network}` };
    const counterfactual = await this.counterfactualDeployment(transfer);
    if (counterfactual && !counterfactual.ok) return counterfactual;
    const deployment = counterfactual?.deployment;
    if (deployment && !(await this.isContract(transfer.network, MULTICALL3_ADDRESS))) return this.noMulticall(transfer);
    const to = deployment ? MULTICALL3_ADDRESS : transfer.asset.address;
    const data = deployment ? this.counterfactualCalldata(transfer, deployment) : this.transferCalldata(transfer);
    // One simulated execution gives the gas where the node has eth_simulateV1 (measured on anvil: 0.9-1.2 ms against
    // 2.0-2.7 ms for estimateGas's search). A call it says would fail is estimated after all, whose error says why.
    const simulated = deployment ? undefined : (await this.simulateEach(transfer.network, from, [{ to, data }]))?.[0];
    if (simulated !== undefined) return { ok: true, call: { to, data, gas: simulated } };
    try {
      const gas = await transfer.network.client.estimateGas({ account: from, to, data });
      return { ok: true, call: { to, data, gas } };
    } catch (error) {
      if (isTransportFailure(error)) throw unavailable(error);
      return this.diagnose(transfer, error);
    }
  }

  /**
   * Renewals due at once go through here (issue 13): one RPC round trip for a batch instead of two per payment. The
   * token's own simulation stands in for the native signature check settlementCall's callers run first: these
   * authorizations were verified when they were stored, and a transfer the token accepts is one it will settle.
   */
  async settlementCalls(authorizations: readonly TransferAuthorization[]): Promise<(ContractCall | undefined)[]> {
    const answers: (ContractCall | undefined)[] = authorizations.map(() => undefined);
    const plain = authorizations.flatMap((authorization, i) => {
      const resolved = this.resolve(authorization);
      return resolved.ok && !authorization.signature.endsWith(ERC6492_MAGIC_SUFFIX) ? [{ i, transfer: resolved.value }] : [];
    });
    const network = plain[0]?.transfer.network;
    const from = network?.signers.signers[0]?.address;
    if (!network || !from || plain.some((p) => p.transfer.network !== network)) return answers;
    if (plain.length < 2 || !(await this.isContract(network, MULTICALL3_ADDRESS))) return answers;
    const calls = plain.map(({ transfer }) => ({ to: transfer.asset.address, data: this.transferCalldata(transfer) }));
    const gas = (await this.simulateEach(network, from, calls)) ?? (await this.estimateShares(network, from, calls));
    plain.forEach(({ i }, k) => {
      if (gas[k] !== undefined) answers[i] = { ...calls[k]!, gas: gas[k] };
    });
    return answers;
  }

  async estimateEach(networkId: string, calls: readonly { to: Address; data: Hex }[]): Promise<(bigint | undefined)[]> {
    const network = this.networks.resolve(networkId, 2);
    const from = network?.signers.signers[0]?.address;
    if (!network || !from || calls.length === 0) return calls.map(() => undefined);
    return (await this.simulateEach(network, from, calls)) ?? calls.map(() => undefined);
  }

  /**
   * Each call as a transaction of its own, one after another in one simulated block (eth_simulateV1): whether it would
   * succeed, and the gas it uses, what a one-by-one estimate gives, from one execution. An estimate of the whole
   * batch costs a node a binary search over full executions of it (measured on anvil for 100 transfers: 163 ms of its
   * CPU against 11 ms for this). Undefined when the node does not offer the method.
   */
  private async simulateEach(network: Network, from: Address, calls: readonly { to: Address; data: Hex }[]): Promise<(bigint | undefined)[] | undefined> {
    if (this.withoutSimulate.has(network.config.network)) return undefined;
    try {
      const [block] = await network.client.simulateBlocks({ blocks: [{ calls: calls.map((call) => ({ account: from, ...call })) }] });
      const results = block?.calls ?? [];
      // before refunds where the node says: a limit must cover what a call uses before its refund
      return calls.map((_, k) => (results[k]?.status === 'success' ? (results[k].maxUsedGas ?? results[k].gasUsed) : undefined));
    } catch (error) {
      if (!isMethodMissing(error)) {
        if (isTransportFailure(error)) throw unavailable(error);
        return calls.map(() => undefined); // each goes its own way, which says why
      }
      this.withoutSimulate.add(network.config.network);
      this.logger.log(`${network.config.network}: the node has no eth_simulateV1; settlements are estimated with eth_estimateGas`);
      return undefined;
    }
  }

  /** Without eth_simulateV1: one aggregate3 eth_call says which would pass, and one estimate of those is shared out. */
  private async estimateShares(network: Network, from: Address, calls: { to: Address; data: Hex }[]): Promise<(bigint | undefined)[]> {
    const aggregated = calls.map(({ to, data }) => ({ target: to, allowFailure: true, callData: data }));
    const passing = await this.aggregate(network, aggregated);
    const count = BigInt(passing.filter(Boolean).length);
    if (count === 0n) return calls.map(() => undefined);
    let total: bigint;
    try {
      const data = encodeFunctionData({ abi: multicall3Abi, functionName: 'aggregate3', args: [aggregated.filter((_, k) => passing[k])] });
      total = await network.client.estimateGas({ account: from, to: MULTICALL3_ADDRESS, data });
    } catch (error) {
      if (isTransportFailure(error)) throw unavailable(error);
      return calls.map(() => undefined); // the state moved between the two calls: each goes its own way
    }
    // a share of the batch, plus what a transaction of its own pays on top (what a one-by-one estimate includes)
    const share = (total + count - 1n) / count + INTRINSIC_GAS;
    return passing.map((ok) => (ok ? share : undefined));
  }

  /** One eth_call of aggregate3: whether each call would succeed now. */
  private async aggregate(network: Network, calls: { target: Address; allowFailure: boolean; callData: Hex }[]): Promise<boolean[]> {
    try {
      const { data } = await network.client.call({
        to: MULTICALL3_ADDRESS,
        data: encodeFunctionData({ abi: multicall3Abi, functionName: 'aggregate3', args: [calls] }),
      });
      const results = data ? decodeFunctionResult({ abi: multicall3Abi, functionName: 'aggregate3', data }) : [];
      return calls.map((_, k) => results[k]?.success === true);
    } catch (error) {
      if (isTransportFailure(error)) throw unavailable(error);
      return calls.map(() => false);
    }
  }

  /**
   * The token's gas cap: the settlement's gas limit (the estimate with its margin: the most it can burn) at today's
   * fee, priced in the token, must stay within its share of the payment.
   */
  async gasCapExceeded(authorization: TransferAuthorization, estimate: bigint): Promise<string | undefined> {
    const resolved = this.resolve(authorization);
    if (!resolved.ok) return undefined;
    const { network, asset } = resolved.value;
    const cap = asset.gasCap;
    const signer = network.signers.signers[0];
    if (!cap || !signer) return undefined;
    const { maxFeePerGas } = await signer.currentFees();
    const costInAsset = (settlementGasLimit(estimate) * maxFeePerGas * cap.nativePrice) / 10n ** 18n;
    const allowed = (authorization.value * BigInt(cap.maxShareBps)) / 10_000n;
    if (costInAsset <= allowed) return undefined;
    return `settling would cost about ${costInAsset} atomic units of ${asset.symbol} in gas, more than ${cap.maxShareBps / 100}% of the payment (${allowed})`;
  }

  judgeReceipt(transfer: SettledTransfer, receipt: TransactionReceipt): ReceiptJudgement {
    return judgeSettlementReceipt(transfer, receipt);
  }

  sendFault(error: unknown): TransferFault {
    return sendFault(error);
  }

  /**
   * Whether the chain has used (or the payer canceled) an authorization, and by which transaction: the token's
   * `authorizationState`, then its AuthorizationUsed / AuthorizationCanceled log within the last
   * AUTHORIZATION_LOG_LOOKBACK_BLOCKS. `transaction` is undefined when the log is beyond that window (or this node
   * has not indexed it yet). Transport failures throw: an outcome is never guessed.
   */
  async authorizationUse(networkId: string, transfer: SettledTransfer): Promise<AuthorizationUse> {
    const network = this.networks.resolve(networkId, 2);
    if (!network) throw new ChainUnavailableError(`network ${networkId} is no longer configured`);
    const asset = transfer.asset.address;
    const { from: authorizer, nonce } = transfer.authorization;
    const used = await network.client.readContract({ address: asset, abi: eip3009Abi, functionName: 'authorizationState', args: [authorizer, nonce] });
    if (!used) return { used: false };
    const head = await network.client.getBlockNumber();
    const fromBlock = head > AUTHORIZATION_LOG_LOOKBACK_BLOCKS ? head - AUTHORIZATION_LOG_LOOKBACK_BLOCKS : 0n;
    const query = (eventName: 'AuthorizationUsed' | 'AuthorizationCanceled') =>
      network.client.getLogs({
        address: asset,
        event: eip3009Abi.find((e) => e.type === 'event' && e.name === eventName) as AuthorizationEvent,
        args: { authorizer, nonce },
        fromBlock,
        toBlock: head,
      });
    const [usedLogs, canceledLogs] = await Promise.all([query('AuthorizationUsed'), query('AuthorizationCanceled')]);
    if (canceledLogs.length > 0) return { used: true, canceled: true, transaction: canceledLogs[0].transactionHash ?? undefined };
    return { used: true, canceled: false, transaction: usedLogs[0]?.transactionHash ?? undefined };
  }

  /** The authorization's network and token as configured here, or the fault when either is not served. */
  private resolve(authorization: TransferAuthorization): { ok: true; value: EvmTransfer } | Refusal {
    const network = this.networks.resolve(authorization.network, 2);
    if (!network) return { ok: false, fault: 'network_not_served', message: `network "${authorization.network}" is not served by this facilitator` };
    const asset = this.networks.asset(network, authorization.asset);
    if (!asset) return { ok: false, fault: 'asset_not_accepted', message: `asset ${authorization.asset} is not accepted on ${network.config.network}` };
    return { ok: true, value: { authorization, network, asset } };
  }

  private transferCalldata(transfer: EvmTransfer): Hex {
    return transferWithAuthorizationCalldata(transfer.authorization, this.innerSignature(transfer.authorization.signature));
  }

  /** Multicall3 aggregate3: deploy the payer's wallet (may fail: already deployed), then the transfer (must not fail). */
  private counterfactualCalldata(transfer: EvmTransfer, deployment: Eip6492Deployment): Hex {
    const { from, to, value, validAfter, validBefore, nonce } = transfer.authorization;
    const transferCall = encodeFunctionData({
      abi: eip3009Abi,
      functionName: 'transferWithAuthorization',
      args: [from, to, value, validAfter, validBefore, nonce, this.innerSignature(transfer.authorization.signature)],
    });
    return encodeFunctionData({
      abi: multicall3Abi,
      functionName: 'aggregate3',
      args: [
        [
          { target: deployment.factory, allowFailure: true, callData: deployment.factoryCalldata },
          { target: transfer.asset.address, allowFailure: false, callData: transferCall },
        ],
      ],
    });
  }

  private innerSignature(signature: Hex): Hex {
    return signature.endsWith(ERC6492_MAGIC_SUFFIX) ? parseErc6492Signature(signature).signature : signature;
  }

  /** One eth_call of the transfer itself. */
  private async simulateTransfer(transfer: EvmTransfer): Promise<true | Refusal> {
    try {
      await transfer.network.client.call({ to: transfer.asset.address, data: this.transferCalldata(transfer) });
      return true;
    } catch (error) {
      if (isTransportFailure(error)) throw unavailable(error);
      return this.diagnose(transfer, error);
    }
  }

  /** One eth_call of the settlement a counterfactual payer gets: Multicall3 aggregate3 of factory call + transfer. */
  private async simulateCounterfactual(transfer: EvmTransfer, deployment: Eip6492Deployment): Promise<true | Refusal> {
    let data: Hex | undefined;
    try {
      ({ data } = await transfer.network.client.call({ to: MULTICALL3_ADDRESS, data: this.counterfactualCalldata(transfer, deployment) }));
    } catch (error) {
      if (isTransportFailure(error)) throw unavailable(error);
      return this.diagnose(transfer, error);
    }
    // A call to an address without code "succeeds" with no data: only a decoded aggregate3 answer counts.
    let results: readonly { success: boolean }[] | undefined;
    try {
      results = data ? decodeFunctionResult({ abi: multicall3Abi, functionName: 'aggregate3', data }) : undefined;
    } catch {
      results = undefined;
    }
    if (results?.length !== 2) return this.noMulticall(transfer);
    return results[1].success ? true : this.diagnose(transfer, new Error('the transfer failed inside Multicall3'));
  }

  private noMulticall(transfer: EvmTransfer): Refusal {
    return {
      ok: false,
      fault: 'simulation_failed',
      message: `Multicall3 (${MULTICALL3_ADDRESS}) is not deployed on ${transfer.network.config.network}, so a counterfactual wallet cannot be deployed and charged here`,
    };
  }

  /**
   * For an ERC-6492-wrapped signature whose payer has no code: the factory call if the factory is allowed on this
   * network, else why not. Undefined when the signature is not wrapped or the wallet is already deployed (then the
   * wrapper is ignored and the inner signature is an ordinary ERC-1271 one).
   */
  private async counterfactualDeployment(transfer: EvmTransfer): Promise<SignatureCheck | undefined> {
    if (!transfer.authorization.signature.endsWith(ERC6492_MAGIC_SUFFIX)) return undefined;
    let parsed;
    try {
      parsed = parseErc6492Signature(transfer.authorization.signature);
    } catch {
      return { ok: false, fault: 'signature_unparseable', message: 'the ERC-6492 signature wrapper cannot be decoded' };
    }
    const { from } = transfer.authorization;
    if (await this.hasCode(transfer.network, from)) return undefined;
    const { address: factory, data: factoryCalldata } = parsed;
    if (!factory || !factoryCalldata || factoryCalldata === '0x' || isAddressEqual(factory, ZERO_ADDRESS)) {
      // As the reference: a wrapper without deployment data is no counterfactual signature, and no valid one either.
      return { ok: false, fault: 'signature_invalid', message: `the ERC-6492 wrapper names no factory call, and ${from} has no code` };
    }
    const allowed = transfer.network.config.eip6492AllowedFactories.some((a) => a.toLowerCase() === factory.toLowerCase());
    if (!allowed) {
      return {
        ok: false,
        fault: 'factory_not_allowed',
        message: `the payer's wallet is not deployed and its factory ${factory} is not on this facilitator's allowlist for ${transfer.network.config.network}`,
      };
    }
    return { ok: true, deployment: { factory: getAddress(factory), factoryCalldata } };
  }

  /**
   * EOA (native recovery), deployed contract wallet (ERC-1271, also when the signature is ERC-6492-wrapped), or
   * counterfactual wallet with an allowed factory: that signature is checked by the simulation, as in the reference.
   */
  private async checkSignature(transfer: EvmTransfer): Promise<SignatureCheck> {
    const { authorization, asset, network } = transfer;
    let digest: Hex;
    try {
      digest = transferWithAuthorizationDigest(
        { name: authorization.domain.name, version: authorization.domain.version, chainId: network.config.chainId, verifyingContract: asset.address },
        {
          from: authorization.from,
          to: authorization.to,
          value: authorization.value,
          validAfter: authorization.validAfter,
          validBefore: authorization.validBefore,
          nonce: authorization.nonce,
        },
      );
    } catch {
      return { ok: false, fault: 'signature_invalid', message: 'the authorization cannot be hashed as EIP-712 typed data' };
    }
    const bad: SignatureCheck = { ok: false, fault: 'signature_invalid', message: `the signature is not ${authorization.from}'s over this authorization` };
    const counterfactual = await this.counterfactualDeployment(transfer);
    if (counterfactual) return counterfactual;
    const signature = this.innerSignature(authorization.signature);
    const recovered = recoverSigner(digest, signature);
    if (recovered !== undefined && isAddressEqual(recovered, authorization.from)) return { ok: true };
    if (!(await this.hasCode(network, authorization.from))) return bad;
    try {
      const result = await network.client.readContract({
        address: authorization.from,
        abi: erc1271Abi,
        functionName: 'isValidSignature',
        args: [digest, signature],
      });
      return String(result).toLowerCase() === ERC1271_MAGIC_VALUE ? { ok: true } : bad;
    } catch (error) {
      if (isTransportFailure(error)) throw unavailable(error);
      return bad;
    }
  }

  private async hasCode(network: Network, address: Address): Promise<boolean> {
    try {
      const code = await network.client.getCode({ address });
      return code !== undefined && code !== '0x';
    } catch (error) {
      throw unavailable(error);
    }
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
  private async diagnose(transfer: EvmTransfer, simulationError: unknown): Promise<Refusal> {
    const { client } = transfer.network;
    const { asset, authorization } = transfer;
    const payer = authorization.from;
    const detail = revertReason(simulationError);
    const fail = (fault: TransferFault, message: string): Refusal => ({ ok: false, fault, message: detail ? `${message} (${detail})` : message });
    const [state, balance] = await Promise.allSettled([
      client.readContract({ address: asset.address, abi: eip3009Abi, functionName: 'authorizationState', args: [authorization.from, authorization.nonce] }),
      client.readContract({ address: asset.address, abi: eip3009Abi, functionName: 'balanceOf', args: [authorization.from] }),
    ]);
    if (state.status === 'rejected') {
      if (isTransportFailure(state.reason)) throw unavailable(state.reason);
      return fail('eip3009_unsupported', `token ${asset.address} does not implement EIP-3009`);
    }
    if (state.value === true) return fail('nonce_used', `authorization nonce ${authorization.nonce} of ${payer} is already used or canceled`);
    if (balance.status === 'fulfilled' && balance.value < authorization.value) {
      return fail('insufficient_balance', `${payer} holds ${balance.value} of ${asset.symbol}, less than ${authorization.value}`);
    }
    if (balance.status === 'rejected' && isTransportFailure(balance.reason)) throw unavailable(balance.reason);
    this.logger.debug(`simulation failed for ${payer}: ${detail}`);
    return fail('simulation_failed', 'the transfer would revert');
  }
}

/** The chain could not be reached: the rail's one error. */
function unavailable(cause: unknown): ChainUnavailableError {
  return new ChainUnavailableError(`the chain could not be reached: ${revertReason(cause) ?? String(cause)}`);
}

function safeAddress(value: string): Address {
  try {
    return getAddress(value);
  } catch {
    return '0x0000000000000000000000000000000000000000';
  }
}

/** The node does not have the method (JSON-RPC -32601, or -32004 "not supported"), as opposed to refusing the call. */
function isMethodMissing(error: unknown): boolean {
  for (let e: unknown = error; e instanceof Error; e = e.cause) {
    const code = (e as { code?: unknown }).code;
    if (code === -32601 || code === -32004) return true;
    if (/method .*(not found|not supported|does not exist|not available)|unsupported method/i.test(e.message)) return true;
  }
  return false;
}
