import { Inject, Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { PrismaService } from '@mp/db';
import { FACILITATOR_CONFIG, type FacilitatorConfig } from '../config/facilitator.config';
import { EvmRefunds } from './evm-refunds';
import { RefundRepository, type RefundRecord } from './refund.repository';
import { StripeRefunds } from './stripe-refunds';

/** Refunds looked at per round, oldest first. */
const BATCH = 100;

/**
 * Finishes pending refunds (worker role), every RECOVERY_INTERVAL_MS and at boot: those left by a crash, a lost
 * answer, a transaction not mined within REFUND_WAIT_MS, or a Stripe refund no webhook finished. Each is decided by
 * the chain (the recorded transaction's receipt, else its nonce) or by Stripe (the refund found by its metadata).
 */
@Injectable()
export class RefundSweep implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger(RefundSweep.name);
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;

  constructor(
    @Inject(FACILITATOR_CONFIG) private readonly config: FacilitatorConfig,
    private readonly refunds: RefundRepository,
    private readonly evm: EvmRefunds,
    private readonly stripe: StripeRefunds,
    private readonly db: PrismaService,
  ) {}

  onModuleInit(): void {
    void this.runOnce();
    this.timer = setInterval(() => void this.runOnce(), this.config.recoveryIntervalMs);
    this.timer.unref();
  }

  async onModuleDestroy(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.running;
  }

  /** One round; a round still running is joined, not doubled. `idleMs`: how long a refund must have been left alone. */
  runOnce(idleMs = this.config.recoveryIntervalMs): Promise<void> {
    this.running ??= this.round(idleMs).finally(() => (this.running = undefined));
    return this.running;
  }

  private async round(idleMs: number): Promise<void> {
    let pending: RefundRecord[];
    try {
      pending = await this.refunds.pending(idleMs, BATCH);
    } catch (error) {
      this.logger.debug(`refund sweep skipped: ${(error as Error).message}`);
      return;
    }
    for (const refund of pending) {
      try {
        if (refund.rail === 'evm') await this.evm.resume(refund);
        else if (this.stripe.configured) await this.stripe.resume(refund, await this.paymentIntentOf(refund.paymentId));
      } catch (error) {
        // the chain or Stripe unreachable: the next round asks again
        this.logger.debug(`refund sweep: refund ${refund.id}: ${(error as Error).message.split('\n')[0]}`);
      }
    }
  }

  private async paymentIntentOf(paymentId: string): Promise<string> {
    const payment = await this.db.payment.findUniqueOrThrow({ where: { id: paymentId }, select: { reference: true } });
    if (!payment.reference) throw new Error(`payment ${paymentId} has no PaymentIntent`);
    return payment.reference;
  }
}
