import { Inject, Injectable, Logger } from '@nestjs/common';
import { getAddress } from 'viem';
import { checkEvmCharge, evmChargeRequestSchema, EVM_METHOD, normalizeEvmChargeRequest, type EvmChargeCredential, type MppError } from '@mp/mpp';
import type { HexString, TransferAuthorization } from '@mp/money';
import { canonicalJson, sha256Hex } from '@mp/x402';
import { ChainUnavailableError, TRANSFER_AUTHORIZATION_RAIL, type TransferAuthorizationRail } from '../../eip3009/transfer-authorization.rail';
import { NetworkRegistry } from '../../networks/network-registry';
import { SettlementService, type PreparedCall } from '../../settlement/settlement.service';
import { Clock } from '../../x402/clock';
import type { ChargeAttempt, ChargeRail, RailSettlement, RailVerdict, RequestCheck } from './charge-rail';
import { problemOf, problemOfOutcome } from './evm-problems';

/**
 * Method `evm`: an EIP-3009 authorization bound to the challenge (nonce = keccak256(id + realm)), checked by the same
 * EIP-3009 rail and settled by the same settlement engine as x402, so it gets the same exactly-once claim, signer
 * pool, crash recovery and outbox events.
 */
@Injectable()
export class EvmChargeRail implements ChargeRail {
  readonly method = EVM_METHOD;
  private readonly logger = new Logger(EvmChargeRail.name);

  constructor(
    private readonly networks: NetworkRegistry,
    @Inject(TRANSFER_AUTHORIZATION_RAIL) private readonly rail: TransferAuthorizationRail,
    private readonly settlement: SettlementService,
    private readonly clock: Clock,
  ) {}

  normalize(request: unknown): RequestCheck {
    const parsed = evmChargeRequestSchema.safeParse(request);
    if (!parsed.success) return { ok: false, problems: parsed.error.issues.map((i) => `request.${i.path.join('.')}: ${i.message}`) };
    const { chainId, decimals } = parsed.data.methodDetails;
    const network = this.networks.resolve(`eip155:${chainId}`, 2);
    if (!network) return { ok: false, problems: [`request.methodDetails.chainId: chain ${chainId} is not served by this facilitator`] };
    const asset = this.networks.asset(network, parsed.data.currency);
    if (!asset) return { ok: false, problems: [`request.currency: ${parsed.data.currency} is not an accepted asset on eip155:${chainId}`] };
    if (decimals !== undefined && decimals !== asset.decimals)
      return { ok: false, problems: [`request.methodDetails.decimals: ${asset.symbol} has ${asset.decimals} decimals, not ${decimals}`] };
    return { ok: true, request: normalizeEvmChargeRequest(parsed.data, asset.decimals) };
  }

  async verify(attempt: ChargeAttempt, { beforeSettle }: { beforeSettle: boolean }): Promise<RailVerdict> {
    const checked = this.authorization(attempt);
    if (!checked.ok) return checked;
    try {
      // Before settling, the signature and the chain's facts; the settlement engine simulates the transfer itself.
      const verdict = await this.rail.verify(checked.authorization, { simulate: !beforeSettle });
      if (!verdict.ok) return { ok: false, error: problemOf(verdict.fault, verdict.message) };
      return { ok: true, payer: checked.credential.payer };
    } catch (error) {
      if (error instanceof ChainUnavailableError) return { ok: false, error: { code: 'internal-payment-error', detail: error.message } };
      throw error;
    }
  }

  /** After verify(attempt, { beforeSettle: true }), which checked the authorization as settle's preparation would. */
  begin(attempt: ChargeAttempt): Promise<PreparedCall> | undefined {
    const checked = this.authorization(attempt);
    return checked.ok ? this.settlement.prepareCall(checked.authorization) : undefined;
  }

  async settle(attempt: ChargeAttempt, begun?: Promise<PreparedCall>): Promise<RailSettlement> {
    const checked = this.authorization(attempt);
    if (!checked.ok) return { ...checked, final: true };
    const { authorization, credential } = checked;
    const presented = {
      fingerprint: sha256Hex(canonicalJson({ challengeId: attempt.challenge.id, payload: credential.payload })),
      network: `eip155:${credential.request.methodDetails.chainId}`,
    };
    const origin = { protocol: 'mpp', challengeId: attempt.challenge.id } as const;
    const response = await this.settlement.settle(authorization, presented, attempt.merchantId, origin, begun);
    if (response.success) return { ok: true, reference: response.transaction, payer: credential.payer };
    const outcome = problemOfOutcome(response);
    if (!outcome.final) this.logger.warn(`MPP challenge ${attempt.challenge.id}: ${response.errorReason}: ${response.errorMessage ?? ''}`);
    return { ok: false, ...outcome };
  }

  /**
   * The credential's checks that need no chain (mppx's), then its EIP-3009 authorization: the requirements are the
   * challenge's, the token's EIP-712 domain is the one this facilitator configures for it.
   */
  private authorization(
    attempt: ChargeAttempt,
  ): { ok: true; authorization: TransferAuthorization; credential: EvmChargeCredential } | { ok: false; error: MppError } {
    const { challenge, credential } = attempt;
    const checked = checkEvmCharge(challenge, credential.payload, credential.source, this.clock.nowSeconds());
    if (!checked.ok) return { ok: false, error: checked.error };
    const { request, payload, payer } = checked.value;
    const networkId = `eip155:${request.methodDetails.chainId}`;
    const network = this.networks.resolve(networkId, 2);
    if (!network) return { ok: false, error: problemOf('network_not_served', `network "${networkId}" is not served by this facilitator`) };
    const asset = this.networks.asset(network, request.currency);
    if (!asset) return { ok: false, error: problemOf('asset_not_accepted', `asset ${request.currency} is not accepted on ${network.config.network}`) };
    const authorization: TransferAuthorization = {
      network: network.config.network,
      asset: asset.address,
      from: payer,
      to: getAddress(payload.to),
      value: BigInt(payload.value),
      validAfter: BigInt(payload.validAfter),
      validBefore: BigInt(payload.validBefore),
      nonce: payload.nonce.toLowerCase() as HexString,
      signature: payload.signature as HexString,
      domain: { name: asset.eip712.name, version: asset.eip712.version },
      requirement: { payTo: request.recipient, amount: BigInt(request.amount) },
    };
    return { ok: true, authorization, credential: checked.value };
  }
}
