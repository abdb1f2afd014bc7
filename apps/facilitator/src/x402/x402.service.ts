import { Inject, Injectable, Logger } from '@nestjs/common';
import type { TransferAuthorization } from '@mp/money';
import { ProblemError } from '@mp/platform';
import {
  decodePaymentRequest,
  EXACT_SCHEME,
  exactEvmAuthorization,
  PAYMENT_IDENTIFIER,
  X402Reason,
  type PaymentRequest,
  type SettleResponse,
  type SupportedResponse,
  type VerifyResponse,
} from '@mp/x402';
import { ChainUnavailableError, TRANSFER_AUTHORIZATION_RAIL, type TransferAuthorizationRail } from '../eip3009/transfer-authorization.rail';
import { PayToPolicy } from '../merchants/pay-to-policy';
import { NetworkRegistry } from '../networks/network-registry';
import { recordedReason } from '../settlement/recorded-reason';
import { SettlementService } from '../settlement/settlement.service';

/**
 * The x402 facilitator API: decode once (the request, then its `exact` payload into an EIP-3009 authorization), hand
 * the authorization to the rail or the settlement engine, answer in the protocol's own shape; 400 only for malformed
 * input.
 */
@Injectable()
export class X402Service {
  private readonly logger = new Logger(X402Service.name);

  constructor(
    @Inject(TRANSFER_AUTHORIZATION_RAIL) private readonly rail: TransferAuthorizationRail,
    private readonly settlement: SettlementService,
    private readonly networks: NetworkRegistry,
    private readonly payTo: PayToPolicy,
  ) {}

  async verify(body: unknown, merchantId: string | null = null): Promise<VerifyResponse> {
    const decoded = this.decode(body);
    if (!decoded.ok) return decoded.verify;
    const resolution = this.authorization(decoded.request);
    if (!resolution.ok) return resolution.verify;
    const { authorization } = resolution;
    const payer = authorization.from;
    const refused = await this.payTo.x402Refusal(decoded.request, merchantId);
    if (refused) return { isValid: false, invalidReason: refused.reason, invalidMessage: refused.message, payer };
    await this.settlement.assertIdentifierFree(decoded.request, merchantId);
    try {
      const verdict = await this.rail.verify(authorization, { simulate: true });
      return verdict.ok ? { isValid: true, payer } : { isValid: false, invalidReason: recordedReason(verdict.fault), invalidMessage: verdict.message, payer };
    } catch (error) {
      if (error instanceof ChainUnavailableError)
        return { isValid: false, invalidReason: X402Reason.unexpectedVerifyError, invalidMessage: error.message, payer };
      this.logger.error('verification failed unexpectedly', error instanceof Error ? error.stack : String(error));
      return {
        isValid: false,
        invalidReason: X402Reason.unexpectedVerifyError,
        invalidMessage: 'an unexpected error stopped verification; it has been logged',
        payer,
      };
    }
  }

  /** `merchantId`: the caller's merchant (from its API key), or null in open mode without a key. */
  async settle(body: unknown, merchantId: string | null = null): Promise<SettleResponse> {
    const decoded = this.decode(body);
    if (!decoded.ok) return decoded.settle;
    // Refused before the settlement engine sees it: nothing is written for a payTo the merchant did not declare.
    const refused = await this.payTo.x402Refusal(decoded.request, merchantId);
    if (refused) return { success: false, errorReason: refused.reason, errorMessage: refused.message, transaction: '', network: decoded.request.network };
    const { request } = decoded;
    const resolution = this.authorization(request);
    if (!resolution.ok) return resolution.settle;
    const presented = { fingerprint: request.fingerprint, paymentIdentifier: request.paymentIdentifier, network: request.network };
    return this.settlement.settle(resolution.authorization, presented, merchantId, { protocol: 'x402', x402Version: request.x402Version });
  }

  supported(): SupportedResponse {
    const kinds = this.networks
      .all()
      .flatMap((n) => [
        { x402Version: 2, scheme: EXACT_SCHEME, network: n.config.network },
        ...this.networks.v1NamesOf(n.config.network).map((name) => ({ x402Version: 1, scheme: EXACT_SCHEME, network: name })),
      ]);
    return { kinds, extensions: [PAYMENT_IDENTIFIER], signers: { 'eip155:*': this.networks.signerAddresses() } };
  }

  /** The request's `exact` payload as an EIP-3009 authorization, with the checks that need no chain. */
  private authorization(request: PaymentRequest): Resolution {
    const decoded = exactEvmAuthorization(request, this.networks);
    if (decoded.ok) return decoded;
    if (decoded.kind === 'malformed') {
      throw new ProblemError('validation_failed', 'the exact EVM payload is malformed', {
        invalidParams: decoded.issues.map((i) => ({ name: i.field, reason: i.message })),
      });
    }
    const { reason, message, payer } = decoded;
    return {
      ok: false,
      verify: { isValid: false, invalidReason: reason, invalidMessage: message, ...(payer ? { payer } : {}) },
      settle: { success: false, errorReason: reason, errorMessage: message, payer, transaction: '', network: request.network },
    };
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

/** Malformed exact payloads are a 400; refused ones an answer in the protocol's shape. */
type Resolution = { ok: true; authorization: TransferAuthorization } | { ok: false; verify: VerifyResponse; settle: SettleResponse };

function networkOf(body: unknown): string {
  const requirements = (body as { paymentRequirements?: { network?: unknown } } | null)?.paymentRequirements;
  return typeof requirements?.network === 'string' ? requirements.network : '';
}
