import { BullModule } from '@nestjs/bullmq';
import { Module } from '@nestjs/common';
import { SUBSCRIPTION_COMMANDS_QUEUE } from '@mp/clients';
import { MerchantAuthModule } from '../auth/merchant-auth.module';
import { BalancesModule } from '../balances/balances.module';
import { MerchantNoticesQueueModule } from '../reconciliation/webhook-break-notifier';
import { MeterRepository } from '../usage/meter.repository';
import { BILLING_CLOCK, billingClockProvider } from './billing.clock';
import { EntitlementsController } from './entitlements.controller';
import { PlanRepository } from './plan.repository';
import { PlansController } from './plans.controller';
import { RenewalProcessor, RENEWAL_JOB_OPTIONS, RenewalSchedule, RenewalScheduler, RENEWALS_QUEUE } from './renewal.scheduler';
import { SubscriptionLifecycle } from './subscription-lifecycle.service';
import { SUBSCRIPTION_COMMAND_JOB_OPTIONS, SubscriptionOutbox } from './subscription-outbox';
import { SubscriptionsController } from './subscriptions.controller';
import { SubscriptionsRepository } from './subscriptions.repository';
import { UsageChargesRepository } from './usage-charges.repository';
import { UsageCollector } from './usage-collector';

/**
 * Subscriptions (issue 13) over @mp/billing's rules: the merchants' plans, the lifecycle of each subscription (fed by
 * the payment-events consumer through SubscriptionLifecycle), the renewal scan, cancels and entitlements, and the
 * usage charges of plans' usage components (recorded as periods close, drawn from prepaid balances). Every
 * merchant route is scoped by the merchant's API key; the subscriber's routes by a signature of the payer's.
 */
@Module({
  imports: [
    MerchantAuthModule,
    MerchantNoticesQueueModule,
    BalancesModule,
    BullModule.registerQueue(
      { name: SUBSCRIPTION_COMMANDS_QUEUE, defaultJobOptions: SUBSCRIPTION_COMMAND_JOB_OPTIONS },
      { name: RENEWALS_QUEUE, defaultJobOptions: RENEWAL_JOB_OPTIONS },
    ),
  ],
  controllers: [PlansController, SubscriptionsController, EntitlementsController],
  providers: [
    billingClockProvider,
    PlanRepository,
    SubscriptionsRepository,
    SubscriptionOutbox,
    SubscriptionLifecycle,
    RenewalScheduler,
    RenewalSchedule,
    RenewalProcessor,
    UsageChargesRepository,
    UsageCollector,
    // the meters plans' usage components name; provided here, where plans are checked, and exported to UsageModule
    MeterRepository,
  ],
  exports: [SubscriptionLifecycle, RenewalScheduler, SubscriptionsRepository, BILLING_CLOCK, MeterRepository],
})
export class BillingModule {}
