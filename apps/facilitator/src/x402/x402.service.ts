import { Inject, Injectable } from '@nestjs/common';
import { ProblemError } from '@mp/platform';
import {
  decodePaymentRequest,
  PAYMENT_IDENTIFIER,
  X402Reason,
  type PaymentRequest,
  type SettleResponse,
  type SupportedResponse,
  type VerifyResponse,
} from '@mp/x402';
import { PayToPolicy } from '../merchants/pay-to-policy';
import { NetworkRegistry } from '../networks/network-registry';
import { X402_SCHEMES, type X402Scheme } from './schemes/x402-scheme';

/**
 * The x402 facilitator API: decode the request once, apply the checks every scheme shares (the envelope, the
 * merchant's declared payTo), hand it to the scheme the requirements name, answer in the protocol's own shape; 400
 * only for malformed input.
 */
@Injectable()
export class X402Service {
  private readonly byScheme: ReadonlyMap<string, X402Scheme>;

  constructor(
    @Inject(X402_SCHEMES) private readonly schemes: X402Scheme[],
    private readonly networks: NetworkRegistry,
    private readonly payTo: PayToPolicy,
  ) {
    this.byScheme = new Map(schemes.map((s) => [s.scheme, s]));
  }

  /** `merchantId`: the caller's merchant (from its API key), or null in open mode without a key. */
  async verify(body: unknown, merchantId: string | null = null): Promise<VerifyResponse> {
    const routed = await this.route(body, merchantId);
    return routed.ok ? routed.scheme.verify(routed.request, merchantId) : routed.verify;
  }

  async settle(body: unknown, merchantId: string | null = null): Promise<SettleResponse> {
    const routed = await this.route(body, merchantId);
    return routed.ok ? routed.scheme.settle(routed.request, merchantId) : routed.settle;
  }

  supported(): SupportedResponse {
    return {
      kinds: this.schemes.flatMap((s) => s.kinds()),
      extensions: [PAYMENT_IDENTIFIER],
      signers: { 'eip155:*': this.networks.signerAddresses() },
    };
  }

  /** The decoded request and its scheme, or the answer that refuses it before any scheme sees it (nothing written). */
  private async route(body: unknown, merchantId: string | null): Promise<Routed> {
    const decoded = decodePaymentRequest(body);
    if (!decoded.ok) {
      if (decoded.kind === 'malformed') {
        const fields = decoded.issues.map((i) => i.field).join(', ');
        throw new ProblemError('validation_failed', `invalid field(s): ${fields}`, {
          invalidParams: decoded.issues.map((i) => ({ name: i.field, reason: i.message })),
        });
      }
      return refusal(decoded.reason, decoded.message, networkOf(body));
    }
    const { request } = decoded;
    const scheme = this.byScheme.get(request.scheme);
    if (!scheme) {
      const served = [...this.byScheme.keys()].map((s) => `"${s}"`).join(', ');
      return refusal(X402Reason.unsupportedScheme, `scheme "${request.scheme}" is not supported; use ${served}`, request.network);
    }
    const refused = await this.payTo.x402Refusal(request, merchantId);
    if (refused) return refusal(refused.reason, refused.message, request.network, scheme.payer?.(request));
    return { ok: true, request, scheme };
  }
}

type Routed = { ok: true; request: PaymentRequest; scheme: X402Scheme } | { ok: false; verify: VerifyResponse; settle: SettleResponse };

function refusal(reason: string, message: string, network: string, payer?: string): Routed {
  return {
    ok: false,
    verify: { isValid: false, invalidReason: reason, invalidMessage: message, ...(payer && { payer }) },
    settle: { success: false, errorReason: reason, errorMessage: message, transaction: '', network },
  };
}

function networkOf(body: unknown): string {
  const requirements = (body as { paymentRequirements?: { network?: unknown } } | null)?.paymentRequirements;
  return typeof requirements?.network === 'string' ? requirements.network : '';
}
