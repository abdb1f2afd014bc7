import { Module } from '@nestjs/common';
import { Eip3009Module } from '../eip3009/eip3009.module';
import { NetworksModule } from '../networks/networks.module';
import { RefundsModule } from '../refunds/refunds.module';
import { SettlementModule } from '../settlement/settlement.module';
import { FACILITATOR_CONFIG, type FacilitatorConfig } from '../config/facilitator.config';
import { StripeModule } from '../stripe/stripe.module';
import { AuthorizationVault } from './authorization-vault';
import { EvmSubscriptionRail } from './evm-subscription.rail';
import { SubscriptionCommandsService } from './subscription-commands.service';
import { SUBSCRIPTION_RAILS } from './subscription-rail';
import { StripeSubscriptionRail } from './stripe-subscription.rail';
import { StripeSubscriptions } from './stripe-subscriptions.repository';
import { Subscriptions } from './subscriptions.repository';

/**
 * MPP subscriptions on the facilitator (issue 13): the instruments (a grant's sealed authorizations) and the rails that
 * charge them (and RefundsService, which executes the refund the ledger asks for after an immediate cancel). Every role has these; the commands worker and the revocation watcher that drive them run in
 * FacilitatorWorkersModule (worker role, and only with SUBSCRIPTION_SEALING_KEYS). MppModule offers the activation
 * (intent `subscription`) through EvmSubscriptionRail and, with Stripe configured, StripeSubscriptionRail (whose
 * renewals Stripe Billing collects and StripeWebhooksController reports).
 */
@Module({
  imports: [NetworksModule, Eip3009Module, SettlementModule, RefundsModule, StripeModule],
  providers: [
    Subscriptions,
    StripeSubscriptions,
    AuthorizationVault,
    EvmSubscriptionRail,
    StripeSubscriptionRail,
    SubscriptionCommandsService,
    {
      provide: SUBSCRIPTION_RAILS,
      inject: [FACILITATOR_CONFIG, EvmSubscriptionRail, StripeSubscriptionRail],
      useFactory: (config: FacilitatorConfig, evm: EvmSubscriptionRail, stripe: StripeSubscriptionRail) => [evm, ...(config.stripe ? [stripe] : [])],
    },
  ],
  exports: [Subscriptions, AuthorizationVault, EvmSubscriptionRail, StripeSubscriptionRail, SubscriptionCommandsService],
})
export class SubscriptionsModule {}
