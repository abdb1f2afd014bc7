import { Module } from '@nestjs/common';
import { NetworksModule } from '../networks/networks.module';
import { StripeModule } from '../stripe/stripe.module';
import { EvmRefunds } from './evm-refunds';
import { RefundRepository } from './refund.repository';
import { RefundsController } from './refunds.controller';
import { RefundsService } from './refunds.service';
import { StripeRefunds } from './stripe-refunds';

/**
 * Refunds of confirmed payments (issue 13 item 5): POST /refunds, GET /refunds/{id}, GET /payments/{id}/refunds, the
 * EVM rail (the merchant's refund wallet) and the Stripe rail. Stripe's refund webhooks come in through the stripe
 * webhooks controller (MppModule), which uses StripeRefunds; the sweep (RefundSweep) runs in FacilitatorWorkersModule.
 */
@Module({
  imports: [NetworksModule, StripeModule],
  controllers: [RefundsController],
  providers: [RefundRepository, EvmRefunds, StripeRefunds, RefundsService],
  exports: [RefundRepository, EvmRefunds, StripeRefunds, RefundsService],
})
export class RefundsModule {}
