import { randomBytes } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { getAddress, recoverTypedDataAddress, type Address, type Hex } from 'viem';
import { eip3009Abi, type AssetConfig } from '@mp/chain';
import {
  checkEvmSubscription,
  decodeOpaque,
  EVM_METHOD,
  evmSubscriptionRequestProblems,
  evmSubscriptionRequestSchema,
  normalizeEvmSubscriptionRequest,
  SUBSCRIPTION_INTENT,
  subscriptionPeriod,
  subscriptionWindows,
  transferWithAuthorizationTypedData,
  type CheckedPeriodAuthorization,
  type EvmSubscriptionCredential,
  type MppError,
} from '@mp/mpp';
import type { HexString, TransferAuthorization } from '@mp/money';
import { canonicalJson, sha256Hex, X402Reason } from '@mp/x402';
import { ChainUnavailableError, TRANSFER_AUTHORIZATION_RAIL, type TransferAuthorizationRail } from '../eip3009/transfer-authorization.rail';
import type { ChargeAttempt, ChargeRail, RailSettlement, RailVerdict, RequestCheck } from '../mpp/charges/charge-rail';
import { problemOf, problemOfOutcome } from '../mpp/charges/evm-problems';
import { MAX_CHALLENGE_TTL_SECONDS } from '../mpp/mpp-secrets';
import { NetworkRegistry, type Network } from '../networks/network-registry';
import type { NewPayment } from '../settlement/chain-payments.repository';
import { SettlementQueue } from '../settlement/settlement.queue';
import { SettlementService, type Presentation } from '../settlement/settlement.service';
import { Clock } from '../x402/clock';
import { AuthorizationVault } from './authorization-vault';
import { UnsealError } from './sealing';
import type { ChargePreparation, ChargeRequest, SubscriptionRail } from './subscription-rail';
import { Subscriptions, type StoredAuthorization, type SubscriptionRecord } from './subscriptions.repository';

/** A transfer is not sent this close to its validBefore (as the settlement engine's EXPIRY_MARGIN_SECONDS). */
const SEND_MARGIN_SECONDS = 6n;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

interface CheckedCredential {
  credential: EvmSubscriptionCredential;
  network: Network;
  asset: AssetConfig;
}

/**
 * Method `evm`, intent `subscription` (our EXPERIMENTAL profile, libs/mpp evm-subscription.ts): activation verifies
 * every pre-signed authorization (signature, fields, unused on chain), then writes the subscription, its sealed
 * authorizations and its period 0 payment in one transaction, and settles period 0 through the settlement engine like
 * an evm charge. Renewals (prepareCharge) unseal period N's authorization, check it on chain and hand a payment to the
 * same engine.
 */
@Injectable()
export class EvmSubscriptionRail implements ChargeRail, SubscriptionRail {
  readonly method = EVM_METHOD;
  readonly intent = SUBSCRIPTION_INTENT;
  private readonly logger = new Logger(EvmSubscriptionRail.name);

  constructor(
    private readonly networks: NetworkRegistry,
    @Inject(TRANSFER_AUTHORIZATION_RAIL) private readonly rail: TransferAuthorizationRail,
    private readonly settlement: SettlementService,
    private readonly queue: SettlementQueue,
    private readonly subscriptions: Subscriptions,
    private readonly vault: AuthorizationVault,
    private readonly clock: Clock,
  ) {}

  normalize(request: unknown): RequestCheck {
    const problems = evmSubscriptionRequestProblems(request);
    if (problems.length) return { ok: false, problems };
    const parsed = evmSubscriptionRequestSchema.parse(request);
    const { chainId, decimals, domain } = parsed.methodDetails;
    const network = this.networks.resolve(`eip155:${chainId}`, 2);
    if (!network) return { ok: false, problems: [`request.methodDetails.chainId: chain ${chainId} is not served by this facilitator`] };
    const asset = this.networks.asset(network, parsed.currency);
    if (!asset) return { ok: false, problems: [`request.currency: ${parsed.currency} is not an accepted asset on eip155:${chainId}`] };
    if (decimals !== undefined && decimals !== asset.decimals)
      return { ok: false, problems: [`request.methodDetails.decimals: ${asset.symbol} has ${asset.decimals} decimals, not ${decimals}`] };
    if (domain && (domain.name !== asset.eip712.name || domain.version !== asset.eip712.version))
      return {
        ok: false,
        problems: [`request.methodDetails.domain: ${asset.symbol}'s EIP-712 domain is ${asset.eip712.name} version ${asset.eip712.version}`],
      };
    const expires = new Date(parsed.subscriptionExpires);
    if (expires.getTime() <= this.clock.nowMs()) return { ok: false, problems: ['request.subscriptionExpires: must be in the future'] };
    if (!subscriptionWindows(this.clock.nowSeconds(), subscriptionPeriod(parsed), expires))
      return { ok: false, problems: ['request.subscriptionExpires: more than 120 periods would start before it (one authorization each)'] };
    return { ok: true, request: normalizeEvmSubscriptionRequest(parsed, { decimals: asset.decimals, ...asset.eip712 }) };
  }

  async verify(attempt: ChargeAttempt, { beforeSettle }: { beforeSettle: boolean }): Promise<RailVerdict> {
    const checked = this.checkCredential(attempt);
    if (!checked.ok) return checked;
    try {
      const signatures = await this.checkSignatures(checked.value);
      if (signatures) return { ok: false, error: signatures };
      const unused = await this.checkUnused(checked.value);
      if (unused) return { ok: false, error: unused };
      // Period 0 is charged now: the rest of the EIP-3009 rail's checks (balance, token, and the eth_call unless settling).
      const verdict = await this.rail.verify(this.authorizationOf(checked.value, checked.value.credential.authorizations[0]!), { simulate: !beforeSettle });
      if (!verdict.ok) return { ok: false, error: problemOf(verdict.fault, `period 0: ${verdict.message}`) };
      return { ok: true, payer: checked.value.credential.payer };
    } catch (error) {
      if (error instanceof ChainUnavailableError) return { ok: false, error: { code: 'internal-payment-error', detail: error.message } };
      throw error;
    }
  }

  async settle(attempt: ChargeAttempt): Promise<RailSettlement> {
    const checked = this.checkCredential(attempt);
    if (!checked.ok) return { ...checked, final: true };
    const { credential, network, asset } = checked.value;
    const { challenge } = attempt;
    const scope = attempt.merchantId ?? '';
    const first = this.authorizationOf(checked.value, credential.authorizations[0]!);
    const presented = this.presentation(challenge.id, 0, first.nonce, network);

    let subscription = await this.subscriptions.findByChallenge(scope, challenge.id);
    if (!subscription) {
      const prepared = await this.settlement.prepareClaim(first, presented);
      if (!prepared.ok) return { ok: false, ...problemOfOutcome(prepared.failure) };
      const id = randomBytes(16).toString('base64url');
      const payer = credential.payer.toLowerCase();
      const planId = planOf(challenge.opaque);
      const activated = await this.subscriptions.activate(
        {
          id,
          scope,
          merchantId: attempt.merchantId,
          challengeId: challenge.id,
          method: EVM_METHOD,
          network: network.config.network,
          asset: asset.address.toLowerCase(),
          payer,
          payTo: credential.request.recipient.toLowerCase(),
          amount: BigInt(credential.request.amount),
          periodUnit: credential.period.unit,
          periodCount: credential.period.count,
          anchor: credential.anchor,
          expiresAt: credential.expiresAt,
          authorizedPeriods: credential.authorizations.length,
          planId,
          externalId: credential.request.externalId ?? null,
        },
        credential.authorizations.map((a) => ({
          periodIndex: a.index,
          nonce: a.nonce,
          validAfter: a.validAfter,
          validBefore: a.validBefore,
          ...this.vault.seal(id, a.index, a.nonce, a.signature),
        })),
        {
          ...this.newPayment(first, presented, prepared.call, attempt.merchantId, challenge.id, { id, periodIndex: 0, attempt: 0 }),
          leadingEvents: [
            {
              type: 'subscription.activated',
              data: {
                subscriptionId: id,
                method: EVM_METHOD,
                planId,
                payer,
                payTo: credential.request.recipient.toLowerCase(),
                network: network.config.network,
                asset: asset.address.toLowerCase(),
                amount: credential.request.amount,
                periodUnit: credential.period.unit,
                periodCount: credential.period.count,
                anchor: credential.anchor.toISOString(),
                expiresAt: credential.expiresAt.toISOString(),
                authorizedPeriods: credential.authorizations.length,
                challengeId: challenge.id,
                ...(credential.request.externalId !== undefined && { externalId: credential.request.externalId }),
              },
            },
          ],
        },
      );
      subscription = activated ? await this.subscriptions.find(id) : await this.subscriptions.findByChallenge(scope, challenge.id);
      // its period 0 authorization was claimed by another payment (an evm charge with the same nonce cannot exist: the
      // nonce binds challenge, realm and period), so only a concurrent activation of this very challenge gets here
      if (!subscription) return { ok: false, error: { code: 'invalid-challenge', detail: 'this challenge has already been used' }, final: true };
    }
    const response = await this.settlement.settleClaimed(first, presented, subscription.firstPaymentId, attempt.merchantId);
    if (!response.success) {
      const outcome = problemOfOutcome(response);
      if (!outcome.final) this.logger.warn(`MPP subscription ${subscription.id}: ${response.errorReason}: ${response.errorMessage ?? ''}`);
      return { ok: false, ...outcome };
    }
    return {
      ok: true,
      reference: response.transaction,
      payer: credential.payer,
      receipt: { subscriptionId: subscription.id, ...(subscription.externalId !== null && { externalId: subscription.externalId }) },
    };
  }

  async receiptFields(attempt: ChargeAttempt): Promise<{ subscriptionId: string; externalId?: string } | undefined> {
    const subscription = await this.subscriptions.findByChallenge(attempt.merchantId ?? '', attempt.challenge.id);
    return subscription && { subscriptionId: subscription.id, ...(subscription.externalId !== null && { externalId: subscription.externalId }) };
  }

  async prepareCharge(subscription: SubscriptionRecord, periodIndex: number, attempt: number): Promise<ChargePreparation> {
    const opened = this.openAuthorization(subscription, periodIndex, await this.subscriptions.authorization(subscription.id, periodIndex));
    if (!opened.ok) return opened;
    const { authorization, network } = opened;
    try {
      // true without a payment of ours (the caller checked) means the payer canceled it, or spent it elsewhere
      const use = await this.rail.authorizationUse(network.config.network, { asset: { address: authorization.asset }, authorization });
      if (use.used && use.canceled) {
        const message = `the payer canceled period ${periodIndex}'s authorization on chain (cancelAuthorization)`;
        return {
          ok: false,
          reason: 'revoked',
          message,
          revoked: { message, at: new Date(this.clock.nowMs()), nonce: authorization.nonce, ...(use.transaction && { txHash: use.transaction }) },
        };
      }
      if (use.used)
        return {
          ok: false,
          reason: 'already_paid',
          message: `period ${periodIndex}'s authorization was used on chain${use.transaction ? ` by ${use.transaction}` : ''}`,
        };
    } catch (error) {
      if (error instanceof ChainUnavailableError) return { ok: false, reason: 'rail_error', message: error.message };
      throw error;
    }
    const presented = this.presentation(subscription.challengeId, periodIndex, authorization.nonce, network);
    const prepared = await this.settlement.prepareClaim(authorization, presented);
    if (!prepared.ok)
      return {
        ok: false,
        reason: 'rail_error',
        message: `${prepared.failure.errorReason ?? 'settlement refused'}: ${prepared.failure.errorMessage ?? ''}`.trim(),
      };
    return { ok: true, payment: this.chargePayment(subscription, periodIndex, attempt, authorization, network, prepared.call) };
  }

  /**
   * Renewals due together: each period's authorization opened, then ONE simulation of all their transfers and one gas
   * estimate on each network (EvmTransferRail.settlementCalls). The ones that pass are ready; any other (a transfer
   * that would fail, a window closing, a contract payer) goes through prepareCharge, which says why.
   */
  async prepareCharges(requests: readonly ChargeRequest[]): Promise<ChargePreparation[]> {
    const nowSeconds = this.clock.nowSeconds();
    const opened = requests.map((r) => this.openAuthorization(r.subscription, r.periodIndex, r.authorization));
    const sendable = opened.flatMap((o, i) =>
      o.ok && o.authorization.validAfter < nowSeconds && o.authorization.validBefore > nowSeconds + SEND_MARGIN_SECONDS ? [{ i, ...o }] : [],
    );
    const calls = new Map<number, { to: string; data: string; gas: bigint }>();
    for (const network of new Set(sendable.map((s) => s.network))) {
      const batch = sendable.filter((s) => s.network === network);
      try {
        const answers = await this.rail.settlementCalls(batch.map((b) => b.authorization));
        answers.forEach((call, k) => call && calls.set(batch[k]!.i, call));
      } catch (error) {
        if (!(error instanceof ChainUnavailableError)) throw error;
      }
    }
    return Promise.all(
      requests.map(async (request, i) => {
        const call = calls.get(i);
        const o = opened[i]!;
        if (!call || !o.ok) return o.ok ? this.prepareCharge(request.subscription, request.periodIndex, request.attempt) : o;
        const uneconomic = await this.rail.gasCapExceeded(o.authorization, call.gas);
        if (uneconomic) return { ok: false as const, reason: 'rail_error' as const, message: `${X402Reason.settlementGasExceedsCap}: ${uneconomic}` };
        return { ok: true as const, payment: this.chargePayment(request.subscription, request.periodIndex, request.attempt, o.authorization, o.network, call) };
      }),
    );
  }

  startCharge(paymentId: string): Promise<void> {
    return this.queue.submit(paymentId);
  }

  /** Renewals recorded together are sent together: one Multicall3 transaction per SETTLE_BATCH_MAX of them (submitBatch). */
  startCharges(paymentIds: readonly string[]): Promise<void> {
    return this.queue.submitBatch(paymentIds);
  }

  /** Period N's stored authorization, unsealed, as the transfer it authorizes; or why it cannot be charged. */
  private openAuthorization(
    subscription: SubscriptionRecord,
    periodIndex: number,
    stored: StoredAuthorization | undefined,
  ): { ok: true; authorization: TransferAuthorization; network: Network } | (ChargePreparation & { ok: false }) {
    if (!stored?.sealed || !stored.keyId)
      return { ok: false, reason: 'no_authorization', message: `no authorization is stored for period ${periodIndex} (never signed, or destroyed)` };
    const network = this.networks.resolve(subscription.network, 2);
    const asset = network && this.networks.asset(network, subscription.asset);
    if (!network || !asset) return { ok: false, reason: 'rail_error', message: `${subscription.asset} on ${subscription.network} is no longer served here` };
    let signature: Hex;
    try {
      signature = this.vault.open(subscription.id, periodIndex, stored.nonce, stored.sealed, stored.keyId);
    } catch (error) {
      // a key dropped too early, or a tampered row: an operator's problem, reported instead of retried forever
      if (error instanceof UnsealError) {
        this.logger.error(`subscription ${subscription.id} period ${periodIndex}: ${error.message}`);
        return { ok: false, reason: 'rail_error', message: `the stored authorization cannot be opened: ${error.message}` };
      }
      throw error;
    }
    return {
      ok: true,
      network,
      authorization: {
        network: network.config.network,
        asset: asset.address,
        from: getAddress(subscription.payer),
        to: getAddress(subscription.payTo),
        value: subscription.amount,
        validAfter: stored.validAfter,
        validBefore: stored.validBefore,
        nonce: stored.nonce as HexString,
        signature: signature as HexString,
        domain: { name: asset.eip712.name, version: asset.eip712.version },
        requirement: { payTo: subscription.payTo, amount: subscription.amount },
      },
    };
  }

  private chargePayment(
    subscription: SubscriptionRecord,
    periodIndex: number,
    attempt: number,
    authorization: TransferAuthorization,
    network: Network,
    call: { to: string; data: string; gas: bigint },
  ): NewPayment {
    const presented = this.presentation(subscription.challengeId, periodIndex, authorization.nonce, network);
    return this.newPayment(authorization, presented, call, subscription.merchantId, subscription.challengeId, { id: subscription.id, periodIndex, attempt });
  }

  private newPayment(
    authorization: TransferAuthorization,
    presented: Presentation,
    call: { to: string; data: string; gas: bigint },
    merchantId: string | null,
    challengeId: string,
    subscription: { id: string; periodIndex: number; attempt: number },
  ): NewPayment {
    return {
      network: authorization.network,
      asset: authorization.asset.toLowerCase(),
      payer: authorization.from.toLowerCase(),
      nonce: authorization.nonce.toLowerCase(),
      payTo: authorization.to.toLowerCase(),
      amount: authorization.value,
      validAfter: authorization.validAfter,
      validBefore: authorization.validBefore,
      scheme: EVM_METHOD,
      origin: { protocol: 'mpp', challengeId },
      payloadHash: presented.fingerprint,
      settleTo: call.to,
      settleData: call.data,
      settleGas: call.gas,
      merchantId,
      subscription,
    };
  }

  /** One period's payment as presented: the same for every attempt of it, so a retry follows the same record. */
  private presentation(challengeId: string, periodIndex: number, nonce: string, network: Network): Presentation {
    return { fingerprint: sha256Hex(canonicalJson({ challengeId, periodIndex, nonce: nonce.toLowerCase() })), network: network.config.network };
  }

  private checkCredential(attempt: ChargeAttempt): { ok: true; value: CheckedCredential } | { ok: false; error: MppError } {
    const { challenge, credential } = attempt;
    const checked = checkEvmSubscription(challenge, credential.payload, credential.source, {
      nowSeconds: this.clock.nowSeconds(),
      maxChallengeLifetimeSeconds: MAX_CHALLENGE_TTL_SECONDS,
    });
    if (!checked.ok) return checked;
    const networkId = `eip155:${checked.value.request.methodDetails.chainId}`;
    const network = this.networks.resolve(networkId, 2);
    if (!network) return { ok: false, error: problemOf('network_not_served', `network "${networkId}" is not served by this facilitator`) };
    const asset = this.networks.asset(network, checked.value.request.currency);
    if (!asset) return { ok: false, error: problemOf('asset_not_accepted', `asset ${checked.value.request.currency} is not accepted on ${networkId}`) };
    return { ok: true, value: { credential: checked.value, network, asset } };
  }

  private authorizationOf({ credential, network, asset }: CheckedCredential, a: CheckedPeriodAuthorization): TransferAuthorization {
    return {
      network: network.config.network,
      asset: asset.address,
      from: credential.payer,
      to: getAddress(credential.request.recipient),
      value: BigInt(credential.request.amount),
      validAfter: a.validAfter,
      validBefore: a.validBefore,
      nonce: a.nonce,
      signature: a.signature,
      domain: { name: asset.eip712.name, version: asset.eip712.version },
      requirement: { payTo: credential.request.recipient, amount: BigInt(credential.request.amount) },
    };
  }

  /**
   * Every period's signature is the payer's: native recovery first (EOAs, no RPC); for a payer with code, the wallet's
   * own answer (viem's verifyTypedData: ERC-1271, or ERC-6492 for a wallet not deployed yet).
   */
  private async checkSignatures(checked: CheckedCredential): Promise<MppError | undefined> {
    const { credential, network, asset } = checked;
    const domain = { name: asset.eip712.name, version: asset.eip712.version, chainId: network.config.chainId, verifyingContract: asset.address };
    let contractPayer: boolean | undefined;
    for (const a of credential.authorizations) {
      const typedData = transferWithAuthorizationTypedData(domain, {
        from: credential.payer,
        to: getAddress(credential.request.recipient),
        value: BigInt(credential.request.amount),
        validAfter: a.validAfter,
        validBefore: a.validBefore,
        nonce: a.nonce,
      });
      const recovered = await recoverTypedDataAddress({ ...typedData, signature: a.signature }).catch(() => undefined);
      if (recovered && getAddress(recovered) === credential.payer) continue;
      contractPayer ??= await this.hasCode(network, credential.payer);
      const valid =
        contractPayer && (await network.client.verifyTypedData({ address: credential.payer, ...typedData, signature: a.signature }).catch(() => false));
      if (!valid)
        return { code: 'verification-failed', detail: `authorizations[${a.index}]: the signature is not ${credential.payer}'s (invalid_exact_evm_signature)` };
    }
    return undefined;
  }

  /** No authorization of the grant is used or canceled on chain already (authorizationState, one batched read). */
  private async checkUnused({ credential, network, asset }: CheckedCredential): Promise<MppError | undefined> {
    let states: boolean[];
    try {
      states = await Promise.all(
        credential.authorizations.map((a) =>
          network.client.readContract({ address: asset.address, abi: eip3009Abi, functionName: 'authorizationState', args: [credential.payer, a.nonce] }),
        ),
      );
    } catch (error) {
      throw new ChainUnavailableError(`authorizationState could not be read on ${network.config.network}: ${(error as Error).message}`);
    }
    const used = states.findIndex(Boolean);
    return used < 0
      ? undefined
      : { code: 'verification-failed', detail: `authorizations[${used}] is already used or canceled on chain (invalid_exact_evm_nonce_already_used)` };
  }

  private async hasCode(network: Network, address: Address): Promise<boolean> {
    try {
      const code: Hex | undefined = await network.client.getCode({ address });
      return code !== undefined && code !== '0x';
    } catch (error) {
      throw new ChainUnavailableError(`eth_getCode failed on ${network.config.network}: ${(error as Error).message}`);
    }
  }
}

/** The ledger plan the merchant bound into the challenge (`opaque.plan`), when it is a UUID. */
export function planOf(opaque: string | undefined): string | null {
  if (opaque === undefined) return null;
  const decoded = decodeOpaque(opaque);
  const plan = decoded.ok ? decoded.value.plan : undefined;
  return plan !== undefined && UUID.test(plan) ? plan.toLowerCase() : null;
}
