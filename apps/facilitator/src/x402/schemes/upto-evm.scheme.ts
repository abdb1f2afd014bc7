import { Injectable, Logger } from '@nestjs/common';
import { ProblemError } from '@mp/platform';
import {
  permitNonceKey,
  UPTO_SCHEME,
  uptoEvmPermit,
  X402Reason,
  type PaymentRequest,
  type SettleResponse,
  type SupportedKind,
  type UptoContext,
  type UptoPermit,
  type VerifyResponse,
} from '@mp/x402';
import { ChainUnavailableError } from '../../eip3009/transfer-authorization.rail';
import { NetworkRegistry } from '../../networks/network-registry';
import { ChainPayments } from '../../settlement/chain-payments.repository';
import { SettlementService, type ChainSettlement, type PreparedCall } from '../../settlement/settlement.service';
import { Permit2UptoRail } from '../../upto/permit2-upto.rail';
import { Clock } from '../clock';
import type { X402Scheme } from './x402-scheme';

/**
 * The engine's answers name the EIP-3009 reasons its records share with `exact`; an upto client reads these instead
 * (@x402/evm 2.27's upto vocabulary).
 */
const UPTO_ANSWER_REASONS: Record<string, string> = {
  [X402Reason.exactEvmNonceAlreadyUsed]: X402Reason.permit2InvalidNonce,
  [X402Reason.exactEvmValidBefore]: X402Reason.permit2DeadlineExpired,
  [X402Reason.exactEvmTransactionFailed]: X402Reason.uptoEvmTransactionFailed,
};

/**
 * `upto` on EVM (x402 v2): the payer signs a Permit2 witness transfer of a maximum to the x402 upto proxy, naming one
 * of our signers as the only facilitator that may settle; /verify holds the maximum (and simulates charging all of
 * it), /settle charges the requirements' amount, any amount up to the maximum, once. Zero charges nothing and sends
 * nothing. Charges go through the settlement engine like `exact` payments: claimed once per permit nonce, sent by the
 * worker from the permit's facilitator, confirmed from the chain, with their payment events in the outbox.
 */
@Injectable()
export class UptoEvmScheme implements X402Scheme {
  readonly scheme = UPTO_SCHEME;
  private readonly logger = new Logger(UptoEvmScheme.name);

  constructor(
    private readonly rail: Permit2UptoRail,
    private readonly settlement: SettlementService,
    private readonly payments: ChainPayments,
    private readonly networks: NetworkRegistry,
    private readonly clock: Clock,
  ) {}

  async verify(request: PaymentRequest, merchantId: string | null): Promise<VerifyResponse> {
    const decoded = this.decode(request, 'verify');
    if (!decoded.ok) return decoded.verify;
    const { permit, amount } = decoded;
    const payer = permit.owner;
    await this.settlement.assertIdentifierFree(request, merchantId);
    try {
      const verdict = await this.rail.verify(permit, amount, { simulate: true });
      return verdict.ok ? { isValid: true, payer } : { isValid: false, invalidReason: verdict.reason, invalidMessage: verdict.message, payer };
    } catch (error) {
      return { isValid: false, invalidReason: X402Reason.unexpectedVerifyError, invalidMessage: this.unexpected('verification', error), payer };
    }
  }

  async settle(request: PaymentRequest, merchantId: string | null): Promise<SettleResponse> {
    const decoded = this.decode(request, 'settle');
    if (!decoded.ok) return decoded.settle;
    const { permit, amount } = decoded;
    const answerTo = { payer: permit.owner, network: request.network };
    if (amount > permit.maxAmount) {
      return failure(answerTo, X402Reason.uptoEvmSettlementExceedsAmount, `the charge ${amount} is above the permit's maximum ${permit.maxAmount}`);
    }
    const settlement = this.chainSettlement(permit, amount);
    const presented = { fingerprint: request.fingerprint, paymentIdentifier: request.paymentIdentifier, network: request.network };
    if (amount === 0n && !(await this.payments.findByKey(settlement.key))) {
      // Nothing to charge, and the proxy refuses 0: verify the permit as /settle would (it must still be good), send nothing.
      try {
        await this.settlement.assertIdentifierFree(presented, merchantId);
        const verdict = await this.rail.verify(permit, permit.maxAmount, { simulate: true });
        if (!verdict.ok) return failure(answerTo, verdict.reason, verdict.message);
        return { success: true, payer: permit.owner, transaction: '', network: request.network, amount: '0' };
      } catch (error) {
        if (error instanceof ProblemError) throw error;
        return failure(answerTo, X402Reason.unexpectedSettleError, this.unexpected('settlement', error));
      }
    }
    // A charge, or a zero after a charge of the same permit: the engine answers (a replay gets the original outcome).
    const answer = await this.settlement.settleOnChain(settlement, presented, merchantId, { protocol: 'x402', x402Version: 2 });
    if (answer.success) return { ...answer, amount: amount.toString() };
    const reason = answer.errorReason && UPTO_ANSWER_REASONS[answer.errorReason];
    return reason ? { ...answer, errorReason: reason } : answer;
  }

  /**
   * One kind per served network, naming the facilitator clients must put in their permit's witness: the network's first
   * signer, always the same one (the reference picks one at random on every call, so two requirements built moments
   * apart name different wallets). Verification accepts any of our signers.
   */
  kinds(): SupportedKind[] {
    return this.networks
      .all()
      .flatMap((n) =>
        n.signers.addresses.length
          ? [{ x402Version: 2, scheme: UPTO_SCHEME, network: n.config.network, extra: { facilitatorAddress: n.signers.addresses[0] } }]
          : [],
      );
  }

  /** The permit as the engine settles it: keyed by its Permit2 nonce, charging `amount`, sent from its facilitator. */
  private chainSettlement(permit: UptoPermit, amount: bigint): ChainSettlement {
    return {
      key: { network: permit.network, asset: permit.asset.toLowerCase(), payer: permit.owner.toLowerCase(), nonce: permitNonceKey(permit.nonce) },
      payer: permit.owner,
      payTo: permit.witness.to,
      amount,
      validAfter: permit.witness.validAfter,
      validBefore: permit.deadline,
      scheme: UPTO_SCHEME,
      // Re-verified against the maximum (signature; no simulation of the maximum: the estimate below simulates the charge itself).
      prepare: async (): Promise<PreparedCall> => {
        const verdict = await this.rail.verify(permit, permit.maxAmount, { simulate: false });
        if (!verdict.ok) return verdict;
        return this.rail.settlementCall(permit, amount);
      },
    };
  }

  private decode(request: PaymentRequest, phase: UptoContext['phase']): Decoded {
    const refuse = (reason: string, message: string, payer?: string): Decoded => ({
      ok: false,
      verify: { isValid: false, invalidReason: reason, invalidMessage: message, ...(payer ? { payer } : {}) },
      settle: { success: false, errorReason: reason, errorMessage: message, ...(payer ? { payer } : {}), transaction: '', network: request.network },
    });
    if (request.x402Version !== 2) return refuse(X402Reason.invalidX402Version, 'the upto scheme is served for x402 version 2 only');
    const network = this.networks.resolve(request.network, 2);
    const decoded = uptoEvmPermit(request, this.networks, { now: this.clock.nowSeconds(), facilitators: network?.signers.addresses ?? [], phase });
    if (decoded.ok) return decoded;
    if (decoded.kind === 'malformed') {
      throw new ProblemError('validation_failed', 'the upto EVM payload is malformed', {
        invalidParams: decoded.issues.map((i) => ({ name: i.field, reason: i.message })),
      });
    }
    return refuse(decoded.reason, decoded.message, decoded.payer);
  }

  private unexpected(what: string, error: unknown): string {
    if (error instanceof ChainUnavailableError) return error.message;
    this.logger.error(`upto ${what} failed unexpectedly`, error instanceof Error ? error.stack : String(error));
    return `an unexpected error stopped the ${what}; it has been logged`;
  }
}

type Decoded = { ok: true; permit: UptoPermit; amount: bigint } | { ok: false; verify: VerifyResponse; settle: SettleResponse };

function failure(to: { payer: string; network: string }, reason: string, message: string): SettleResponse {
  return { success: false, errorReason: reason, errorMessage: message, payer: to.payer, transaction: '', network: to.network };
}
