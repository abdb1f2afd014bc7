import { Inject, Injectable, Logger } from '@nestjs/common';
import { getAddress, isAddress } from 'viem';
import type { TransferAuthorization } from '@mp/money';
import { ProblemError } from '@mp/platform';
import { EXACT_SCHEME, exactEvmAuthorization, X402Reason, type PaymentRequest, type SettleResponse, type SupportedKind, type VerifyResponse } from '@mp/x402';
import { ChainUnavailableError, TRANSFER_AUTHORIZATION_RAIL, type TransferAuthorizationRail } from '../../eip3009/transfer-authorization.rail';
import { NetworkRegistry } from '../../networks/network-registry';
import { recordedReason } from '../../settlement/recorded-reason';
import { SettlementService } from '../../settlement/settlement.service';
import type { X402Scheme } from './x402-scheme';

/** `exact` on EVM: the payload's EIP-3009 authorization, verified by the rail and settled by the settlement engine. */
@Injectable()
export class ExactEvmScheme implements X402Scheme {
  readonly scheme = EXACT_SCHEME;
  private readonly logger = new Logger(ExactEvmScheme.name);

  constructor(
    @Inject(TRANSFER_AUTHORIZATION_RAIL) private readonly rail: TransferAuthorizationRail,
    private readonly settlement: SettlementService,
    private readonly networks: NetworkRegistry,
  ) {}

  async verify(request: PaymentRequest, merchantId: string | null): Promise<VerifyResponse> {
    const resolution = this.authorization(request);
    if (!resolution.ok) return resolution.verify;
    const { authorization } = resolution;
    const payer = authorization.from;
    await this.settlement.assertIdentifierFree(request, merchantId);
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

  async settle(request: PaymentRequest, merchantId: string | null): Promise<SettleResponse> {
    const resolution = this.authorization(request);
    if (!resolution.ok) return resolution.settle;
    const presented = { fingerprint: request.fingerprint, paymentIdentifier: request.paymentIdentifier, network: request.network };
    return this.settlement.settle(resolution.authorization, presented, merchantId, { protocol: 'x402', x402Version: request.x402Version });
  }

  kinds(): SupportedKind[] {
    return this.networks
      .all()
      .flatMap((n) => [
        { x402Version: 2, scheme: EXACT_SCHEME, network: n.config.network },
        ...this.networks.v1NamesOf(n.config.network).map((name) => ({ x402Version: 1, scheme: EXACT_SCHEME, network: name })),
      ]);
  }

  payer(request: PaymentRequest): string | undefined {
    const from = (request.payload as { authorization?: { from?: unknown } }).authorization?.from;
    return typeof from === 'string' && isAddress(from, { strict: false }) ? getAddress(from) : undefined;
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
}

/** Malformed exact payloads are a 400; refused ones an answer in the protocol's shape. */
type Resolution = { ok: true; authorization: TransferAuthorization } | { ok: false; verify: VerifyResponse; settle: SettleResponse };
