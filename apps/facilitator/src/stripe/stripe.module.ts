import { Module } from '@nestjs/common';
import { FACILITATOR_CONFIG, type FacilitatorConfig } from '../config/facilitator.config';
import { createStripeClient, STRIPE_CLIENT } from './stripe.client';

/** The Stripe SDK client, present only when STRIPE_SECRET_KEY is set. */
@Module({
  providers: [
    {
      provide: STRIPE_CLIENT,
      inject: [FACILITATOR_CONFIG],
      useFactory: (config: FacilitatorConfig) => (config.stripe ? createStripeClient(config.stripe) : undefined),
    },
  ],
  exports: [STRIPE_CLIENT],
})
export class StripeModule {}
