import { Injectable, Logger } from '@nestjs/common';
import { ProblemError } from '@mp/platform';
import { decodePaymentRequest, PAYMENT_IDENTIFIER, X402Reason, type PaymentRequest, type SettleResponse, type SupportedResponse, type VerifyResponse } from '@mp/x402';
import { PayToPolicy } from '../merchants/pay-to-policy';
import { NetworkRegistry } from '../networks/network-registry';
import { SettlementService } from '../settlement/settlement.service';
import { ExactEvmScheme, VerificationUnavailableError } from './exact-evm/exact-evm.scheme';

/** The x402 facilitator API: decode once, answer in the protocol's own shape, 400 only for malformed input. */
@Injectable()
export class X402Service {
  private readonly logger = new Logger(X402Service.name);

  constructor(
    private readonly scheme: ExactEvmScheme,
    private readonly settlement: SettlementService,
    private readonly networks: NetworkRegistry,
    private readonly payTo: PayToPolicy,
  ) {}

  async verify(body: unknown, merchantId: string | null = null): Promise<VerifyResponse> {
    const decoded = this.decode(body);
    if (!decoded.ok) return decoded.verify;
    const resolution = this.scheme.resolve(decoded.request);
    if (!resolution.ok) return resolution.response;
    const refused = await this.payTo.x402Refusal(decoded.request, merchantId);
    if (refused) return { isValid: false, invalidReason: refused.reason, invalidMessage: refused.message, payer: resolution.payment.payer };
    await this.settlement.assertIdentifierFree(decoded.request, merchantId);
    try {
      return await this.scheme.verify(resolution.payment, { simulate: true });
    } catch (error) {
      if (error instanceof VerificationUnavailableError) {
        return { isValid: false, invalidReason: X402Reason.unexpectedVerifyError, invalidMessage: error.message, payer: resolution.payment.payer };
      }
      this.logger.error('verification failed unexpectedly', error instanceof Error ? error.stack : String(error));
      return { isValid: false, invalidReason: X402Reason.unexpectedVerifyError, invalidMessage: 'an unexpected error stopped verification; it has been logged', payer: resolution.payment.payer };
    }
  }

  /** `merchantId`: the caller's merchant (from its API key), or null in open mode without a key. */
  async settle(body: unknown, merchantId: string | null = null): Promise<SettleResponse> {
    const decoded = this.decode(body);
    if (!decoded.ok) return decoded.settle;
    // Refused before the settlement engine sees it: nothing is written for a payTo the merchant did not declare.
    const refused = await this.payTo.x402Refusal(decoded.request, merchantId);
    if (refused) return { success: false, errorReason: refused.reason, errorMessage: refused.message, transaction: '', network: decoded.request.network };
    return this.settlement.settle(decoded.request, merchantId);
  }

  supported(): SupportedResponse {
    const kinds = this.networks.all().flatMap((n) => [
      { x402Version: 2, scheme: this.scheme.scheme, network: n.config.network },
      ...this.networks.v1NamesOf(n.config.network).map((name) => ({ x402Version: 1, scheme: this.scheme.scheme, network: name })),
    ]);
    return { kinds, extensions: [PAYMENT_IDENTIFIER], signers: { 'eip155:*': this.networks.signerAddresses() } };
  }

  private decode(body: unknown): { ok: true; request: PaymentRequest } | { ok: false; verify: VerifyResponse; settle: SettleResponse } {
    const decoded = decodePaymentRequest(body);
    if (decoded.ok) return decoded;
    if (decoded.kind === 'malformed') {
      const fields = decoded.issues.map((i) => i.field).join(', ');
      throw new ProblemError('validation_failed', `invalid field(s): ${fields}`, {
        invalidParams: decoded.issues.map((i) => ({ name: i.field, reason: i.message })),
      });
    }
    const network = networkOf(body);
    return {
      ok: false,
      verify: { isValid: false, invalidReason: decoded.reason, invalidMessage: decoded.message },
      settle: { success: false, errorReason: decoded.reason, errorMessage: decoded.message, transaction: '', network },
    };
  }
}

function networkOf(body: unknown): string {
  const requirements = (body as { paymentRequirements?: { network?: unknown } } | null)?.paymentRequirements;
  return typeof requirements?.network === 'string' ? requirements.network : '';
}
