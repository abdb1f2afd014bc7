import { Inject, Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { FACILITATOR_CONFIG, type FacilitatorConfig } from '../config/facilitator.config';
import { Clock } from '../x402/clock';
import { intentThatCounts, StripeOutcomes } from './stripe-outcomes';
import { StripePayments, type StripePaymentToResolve } from './stripe-payments.repository';

/** Payments asked about per round; the rest wait for the next round (oldest first). */
const BATCH = 100;

/**
 * Resolves Stripe payments without waiting for a webhook (none may be configured, or it may be lost): every
 * RECOVERY_INTERVAL_MS and at boot (worker role) it asks Stripe for the PaymentIntent of each payment left `verified` that long
 * (an unknown outcome, a crash mid-call) and applies it; failed payments whose PaymentIntent could still succeed are
 * asked again and corrected if it did. A payment with no PaymentIntent at all fails only once its challenge has
 * expired and no call of ours can still be running at Stripe, and only on a list (not a search, which lags).
 */
@Injectable()
export class StripeSweep implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger(StripeSweep.name);
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;

  constructor(
    @Inject(FACILITATOR_CONFIG) private readonly config: FacilitatorConfig,
    private readonly outcomes: StripeOutcomes,
    private readonly stripePayments: StripePayments,
    private readonly clock: Clock,
  ) {}

  onModuleInit(): void {
    if (!this.outcomes.configured) return;
    // At boot too: what a crashed instance left unresolved is asked about at once.
    void this.runOnce();
    this.timer = setInterval(() => void this.runOnce(), this.config.recoveryIntervalMs);
    this.timer.unref();
  }

  async onModuleDestroy(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.running;
  }

  /** One round; a round still running is joined, not doubled. */
  runOnce(): Promise<void> {
    this.running ??= this.round().finally(() => (this.running = undefined));
    return this.running;
  }

  private async round(): Promise<void> {
    let candidates: StripePaymentToResolve[];
    try {
      candidates = await this.stripePayments.toResolve(this.config.recoveryIntervalMs, BATCH);
    } catch (error) {
      this.logger.debug(`Stripe sweep skipped: ${(error as Error).message}`);
      return;
    }
    for (const payment of candidates) {
      try {
        await this.resolve(payment);
      } catch (error) {
        // Stripe unreachable or slow: the next round asks again.
        this.logger.debug(`Stripe sweep: payment ${payment.id}: ${(error as Error).message}`);
      }
    }
  }

  private async resolve(payment: StripePaymentToResolve): Promise<void> {
    if (payment.state === 'failed') {
      // Only a success changes a failed payment (a correction); anything else leaves it as answered.
      const intent = await this.outcomes.retrieve(payment.reference!);
      if (intent.status === 'succeeded') await this.outcomes.apply(payment, intent, 'sweep');
      return;
    }
    const searched = intentThatCounts(await this.outcomes.searchFor(payment.challengeId));
    if (searched) {
      await this.outcomes.apply(payment, searched, 'sweep');
      return;
    }
    if (!this.abandoned(payment)) return;
    const listed = await this.outcomes.listFor(payment.challengeId, payment.createdAt);
    if (listed === undefined) return;
    const intent = intentThatCounts(listed);
    if (intent) await this.outcomes.apply(payment, intent, 'sweep');
    else await this.outcomes.applyAbsent(payment);
  }

  /** Its challenge expired (nobody settles it again) and any call of ours for it has long timed out (retry included). */
  private abandoned(payment: StripePaymentToResolve): boolean {
    const expired = payment.validBefore > 0n && payment.validBefore <= this.clock.nowSeconds();
    return expired && payment.idleMs > 3 * (this.config.stripe?.timeoutMs ?? 0);
  }
}
