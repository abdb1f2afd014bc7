import { Inject, Injectable, Logger } from '@nestjs/common';
import { isUniqueViolation } from '@mp/db';
import { ProblemError } from '@mp/platform';
import { canonicalJson, sha256Hex } from '@mp/x402';
import { FACILITATOR_CONFIG, type FacilitatorConfig } from '../config/facilitator.config';
import { EvmRefunds } from './evm-refunds';
import { RefundRepository, type AcceptOptions, type DenialReason, type RefundablePayment, type RefundRecord } from './refund.repository';
import { toRefundView, type RefundView } from './refund-view';
import type { CreateRefundDto } from './refunds.dto';
import { StripeRefunds } from './stripe-refunds';

/**
 * Refunds of a merchant's confirmed payments (issue 13 item 5), asked for with the merchant's API key in the x402
 * refund extension's shape. The request is checked, then accepted or denied in one transaction with the payment row
 * locked (refunds pending or executed never add up to more than was captured), then carried out by its rail: an
 * ERC-20 transfer from the merchant's refund wallet, or a Stripe refund. The idempotency key is unique per merchant:
 * the same request again answers the refund as it stands now, another request under the key is a 409.
 */
@Injectable()
export class RefundsService {
  private readonly logger = new Logger(RefundsService.name);

  constructor(
    @Inject(FACILITATOR_CONFIG) private readonly config: FacilitatorConfig,
    private readonly refunds: RefundRepository,
    private readonly evm: EvmRefunds,
    private readonly stripe: StripeRefunds,
  ) {}

  async create(merchantId: string, request: CreateRefundDto, options: AcceptOptions = {}): Promise<RefundView> {
    const requestHash = sha256Hex(canonicalJson({ ...request, paymentReference: { ...request.paymentReference } }));
    const replay = await this.replay(merchantId, request.idempotencyKey, requestHash);
    if (replay) return replay;

    const payment = await this.payment(merchantId, request);
    const refundTo = this.refundTo(payment, request);
    const amount = BigInt(request.amount);
    const denial = await this.railDenial(merchantId, payment, amount);
    const newRefund = {
      merchantId,
      idempotencyKey: request.idempotencyKey,
      requestHash,
      amount,
      reason: request.reason,
      reasonDetail: request.reasonDetail,
      refundTo,
      payerSignature: request.payerSignature,
    };
    let outcome;
    try {
      outcome = await this.refunds.accept(payment.id, newRefund, payment.rail, denial, options);
    } catch (error) {
      if (!isUniqueViolation(error)) throw error;
      outcome = { kind: 'key_taken' as const };
    }
    if (outcome.kind === 'key_taken') {
      // a concurrent request with this key won: its refund is the answer (or the conflict)
      return (await this.replay(merchantId, request.idempotencyKey, requestHash))!;
    }
    const refund = outcome.refund;
    if (refund.status === 'pending') await this.carryOut(refund, payment);
    return toRefundView((await this.refunds.byId(refund.id))!);
  }

  async get(merchantId: string, id: string): Promise<RefundView> {
    const refund = await this.refunds.byId(id.toLowerCase(), merchantId);
    if (!refund) throw new ProblemError('not_found', `no refund ${id}`);
    return toRefundView(refund);
  }

  async ofPayment(merchantId: string, paymentId: string): Promise<RefundView[]> {
    if (!(await this.refunds.paymentExists(merchantId, paymentId.toLowerCase()))) throw new ProblemError('not_found', `no payment ${paymentId}`);
    return (await this.refunds.ofPayment(merchantId, paymentId.toLowerCase())).map(toRefundView);
  }

  /** Sends an accepted refund; a failure to reach the rail leaves it pending for the sweep (the answer says pending). */
  private async carryOut(refund: RefundRecord, payment: RefundablePayment): Promise<void> {
    try {
      if (refund.rail === 'evm') await this.evm.execute(refund, this.config.refunds.waitMs);
      else await this.stripe.execute(refund, payment.reference!);
    } catch (error) {
      this.logger.warn(`refund ${refund.id}: left pending for the sweep: ${(error as Error).message.split('\n')[0]}`);
    }
  }

  /** The refund already made under this key: the same request gets it, another one is a conflict. */
  private async replay(merchantId: string, idempotencyKey: string, requestHash: string): Promise<RefundView | undefined> {
    const existing = await this.refunds.byKey(merchantId, idempotencyKey);
    if (!existing) return undefined;
    if (existing.requestHash !== requestHash)
      throw new ProblemError('refund_idempotency_conflict', `idempotencyKey ${idempotencyKey} was used for another refund request (refund ${existing.id})`, {
        refundId: existing.id,
      });
    return toRefundView(existing);
  }

  /** The one payment of this merchant the reference names: 404 for none (another merchant's too), 400 when ambiguous. */
  private async payment(merchantId: string, request: CreateRefundDto): Promise<RefundablePayment> {
    const ref = request.paymentReference;
    const isStripe = ref.network === 'stripe';
    if (isStripe && ref.txHash !== undefined) throw invalid('paymentReference.txHash', 'a Stripe payment has no transaction hash: name it by paymentId');
    if (ref.txHash === undefined && ref.paymentId === undefined)
      throw invalid('paymentReference', isStripe ? 'paymentId is required for a Stripe payment' : 'name the payment by txHash (and paymentId for a batch)');
    const found = await this.refunds.findPayments(merchantId, ref);
    if (found.length === 0) throw new ProblemError('not_found', 'no payment of this merchant matches paymentReference');
    if (found.length > 1) throw invalid('paymentReference.paymentId', 'the transaction settled several of your payments: name one by paymentId');
    return found[0]!;
  }

  private refundTo(payment: RefundablePayment, request: CreateRefundDto): string | null {
    if (payment.rail === 'stripe') {
      if (request.refundTo !== undefined) throw invalid('refundTo', 'a Stripe refund goes back to the payment method that paid: leave refundTo out');
      return null;
    }
    return (request.refundTo ?? payment.payer).toLowerCase();
  }

  /** What the rail rules out before anything is accepted: no Stripe here, no refund wallet, a wallet without the tokens. */
  private async railDenial(merchantId: string, payment: RefundablePayment, amount: bigint): Promise<DenialReason | undefined> {
    if (payment.state !== 'confirmed') return undefined; // the transaction denies it as payment_not_settled
    if (payment.rail === 'stripe') return this.stripe.configured && payment.reference ? undefined : 'rail_not_configured';
    if (!this.evm.walletOf(merchantId)) return 'refund_wallet_not_configured';
    const network = this.evm.network(payment.network);
    if (!network) return 'rail_not_configured';
    try {
      return (await this.evm.underfunded(merchantId, network, payment.asset, amount)) ? 'refund_wallet_underfunded' : undefined;
    } catch (error) {
      throw new ProblemError('upstream_unavailable', `the ${payment.network} RPC did not answer: ${(error as Error).message.split('\n')[0]}`);
    }
  }
}

function invalid(name: string, reason: string): ProblemError {
  return new ProblemError('validation_failed', `invalid field(s): ${name}`, { invalidParams: [{ name, reason }] });
}
