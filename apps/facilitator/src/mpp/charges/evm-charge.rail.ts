import { Injectable, Logger } from '@nestjs/common';
import { checkEvmCharge, evmChargeRequestSchema, EVM_METHOD, normalizeEvmChargeRequest, type EvmChargeCredential, type MppError, type ProblemCode } from '@mp/mpp';
import { canonicalJson, sha256Hex, X402Reason, type PaymentRequest } from '@mp/x402';
import { NetworkRegistry } from '../../networks/network-registry';
import { SettlementService } from '../../settlement/settlement.service';
import { Clock } from '../../x402/clock';
import { ExactEvmScheme, VerificationUnavailableError } from '../../x402/exact-evm/exact-evm.scheme';
import type { ChargeAttempt, ChargeRail, RailSettlement, RailVerdict, RequestCheck } from './charge-rail';

/**
 * Method `evm`: an EIP-3009 authorization bound to the challenge (nonce = keccak256(id + realm)), checked and
 * settled by the same exact-EVM scheme and settlement engine as x402, so it gets the same exactly-once claim,
 * signer pool, crash recovery and outbox events.
 */
@Injectable()
export class EvmChargeRail implements ChargeRail {
  readonly method = EVM_METHOD;
  private readonly logger = new Logger(EvmChargeRail.name);

  constructor(
    private readonly networks: NetworkRegistry,
    private readonly scheme: ExactEvmScheme,
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
    if (decimals !== undefined && decimals !== asset.decimals) return { ok: false, problems: [`request.methodDetails.decimals: ${asset.symbol} has ${asset.decimals} decimals, not ${decimals}`] };
    return { ok: true, request: normalizeEvmChargeRequest(parsed.data, asset.decimals) };
  }

  async verify(attempt: ChargeAttempt, { beforeSettle }: { beforeSettle: boolean }): Promise<RailVerdict> {
    const checked = this.check(attempt);
    if (!checked.ok) return checked;
    const resolution = this.scheme.resolve(this.paymentRequest(attempt, checked.value));
    if (!resolution.ok) return { ok: false, error: fromX402(resolution.response.invalidReason ?? X402Reason.invalidPayload, resolution.response.invalidMessage) };
    try {
      // Before settling, the signature and the chain's facts; the settlement engine simulates the transfer itself.
      const verdict = await this.scheme.verify(resolution.payment, { simulate: !beforeSettle });
      if (!verdict.isValid) return { ok: false, error: fromX402(verdict.invalidReason ?? X402Reason.invalidPayload, verdict.invalidMessage) };
      return { ok: true, payer: checked.value.payer };
    } catch (error) {
      if (error instanceof VerificationUnavailableError) return { ok: false, error: { code: 'internal-payment-error', detail: error.message } };
      throw error;
    }
  }

  async settle(attempt: ChargeAttempt): Promise<RailSettlement> {
    const checked = this.check(attempt);
    if (!checked.ok) return { ...checked, final: true };
    const response = await this.settlement.settle(this.paymentRequest(attempt, checked.value), attempt.merchantId, { protocol: 'mpp', challengeId: attempt.challenge.id });
    if (response.success) return { ok: true, reference: response.transaction, payer: checked.value.payer };
    const reason = response.errorReason ?? X402Reason.unexpectedSettleError;
    const pending = reason === X402Reason.settlementPending || reason === X402Reason.unexpectedSettleError;
    if (pending) this.logger.warn(`MPP challenge ${attempt.challenge.id}: ${reason}: ${response.errorMessage ?? ''}`);
    return { ok: false, error: fromX402(reason, response.errorMessage, response.transaction), final: !pending };
  }

  private check(attempt: ChargeAttempt): { ok: true; value: EvmChargeCredential } | { ok: false; error: MppError } {
    const { challenge, credential } = attempt;
    const checked = checkEvmCharge(challenge, credential.payload, credential.source, this.clock.nowSeconds());
    return checked.ok ? checked : { ok: false, error: checked.error };
  }

  /** The credential as the exact-EVM scheme reads a payment: requirements from the challenge, the token's EIP-712 domain from our config. */
  private paymentRequest(attempt: ChargeAttempt, { request, payload }: EvmChargeCredential): PaymentRequest {
    const network = `eip155:${request.methodDetails.chainId}`;
    const resolved = this.networks.resolve(network, 2);
    const asset = resolved && this.networks.asset(resolved, request.currency);
    const validFor = Number(BigInt(payload.validBefore) - this.clock.nowSeconds());
    const { type: _type, signature, ...authorization } = payload;
    return {
      x402Version: 2,
      scheme: 'exact',
      network,
      amount: request.amount,
      asset: request.currency,
      payTo: request.recipient,
      maxTimeoutSeconds: Math.max(1, validFor),
      extra: asset ? { name: asset.eip712.name, version: asset.eip712.version } : {},
      payloadScheme: 'exact',
      payloadNetwork: network,
      payload: { authorization, signature },
      fingerprint: sha256Hex(canonicalJson({ challengeId: attempt.challenge.id, payload })),
    };
  }
}

/** x402's reasons in MPP's problem types; "unexpected" ones are not the payer's fault and stay retryable. */
function fromX402(reason: string, message: string | undefined, transaction?: string): MppError {
  const detail = `${message ?? reason} (${reason})${transaction ? `; transaction ${transaction}` : ''}`;
  const code: ProblemCode =
    reason === X402Reason.unexpectedVerifyError || reason === X402Reason.unexpectedSettleError || reason === X402Reason.settlementPending
      ? 'internal-payment-error'
      : reason === X402Reason.exactEvmValidBefore
        ? 'payment-expired'
        : 'verification-failed';
  return { code, detail };
}

