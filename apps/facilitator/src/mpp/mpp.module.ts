import { Module } from '@nestjs/common';
import { Eip3009Module } from '../eip3009/eip3009.module';
import { NetworksModule } from '../networks/networks.module';
import { RefundsModule } from '../refunds/refunds.module';
import { SettlementModule } from '../settlement/settlement.module';
import { StripeEvents } from '../stripe/stripe-events.repository';
import { StripeModule } from '../stripe/stripe.module';
import { StripeWebhooksController } from '../stripe/stripe-webhooks.controller';
import { StripeOutcomes } from '../stripe/stripe-outcomes';
import { StripePayments } from '../stripe/stripe-payments.repository';
import { FACILITATOR_CONFIG, type FacilitatorConfig } from '../config/facilitator.config';
import { EvmSubscriptionRail } from '../subscriptions/evm-subscription.rail';
import { StripeSubscriptionRail } from '../subscriptions/stripe-subscription.rail';
import { SubscriptionsModule } from '../subscriptions/subscriptions.module';
import { EvmSessionRail } from '../sessions/evm-session.rail';
import { SessionsModule } from '../sessions/sessions.module';
import { CHARGE_RAILS } from './charges/charge-rail';
import { EvmChargeRail } from './charges/evm-charge.rail';
import { StripeChargeRail } from './charges/stripe-charge.rail';
import { MppClaims } from './mpp-claims.repository';
import { MppController } from './mpp.controller';
import { MppSecrets } from './mpp-secrets';
import { MppService } from './mpp.service';

/**
 * MPP (the Payment HTTP authentication scheme): challenges, credentials, single-use claims, one rail per method and intent,
 * and Stripe's webhooks, which settle what a PaymentIntent call could not tell. The Stripe sweep, which does the same
 * without a webhook, runs in FacilitatorWorkersModule on what this module exports.
 */
@Module({
  imports: [NetworksModule, Eip3009Module, SettlementModule, StripeModule, SubscriptionsModule, RefundsModule, SessionsModule],
  controllers: [MppController, StripeWebhooksController],
  providers: [
    MppService,
    MppSecrets,
    MppClaims,
    StripeEvents,
    StripePayments,
    StripeOutcomes,
    EvmChargeRail,
    StripeChargeRail,
    {
      provide: CHARGE_RAILS,
      inject: [FACILITATOR_CONFIG, EvmChargeRail, StripeChargeRail, EvmSubscriptionRail, StripeSubscriptionRail, EvmSessionRail],
      // the subscription intent only with SUBSCRIPTION_SEALING_KEYS (the subscriptions switch: evm authorizations are
      // never stored unsealed, and the commands worker runs only then); on stripe also only with Stripe configured;
      // the session intent only with a payee key (SESSION_PAYEE_KEYS, or the local chain's merchant)
      useFactory: (
        config: FacilitatorConfig,
        evm: EvmChargeRail,
        stripe: StripeChargeRail,
        evmSubscription: EvmSubscriptionRail,
        stripeSubscription: StripeSubscriptionRail,
        evmSession: EvmSessionRail,
      ) => [
        evm,
        stripe,
        ...(config.subscriptions ? [evmSubscription, ...(config.stripe ? [stripeSubscription] : [])] : []),
        ...(config.sessions ? [evmSession] : []),
      ],
    },
  ],
  exports: [MppClaims, StripeOutcomes, StripePayments],
})
export class MppModule {}
