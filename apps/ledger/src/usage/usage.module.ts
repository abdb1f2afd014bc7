import { Module } from '@nestjs/common';
import { MerchantAuthModule } from '../auth/merchant-auth.module';
import { BillingModule } from '../billing/billing.module';
import { UsageEventStore } from './usage-event.store';
import { UsageController } from './usage.controller';
import { UsageService } from './usage.service';

/**
 * Usage (issue 14): merchants' usage events (CloudEvents, deduplicated on merchant, source and id in the same write)
 * and meters that total them per period. Reads the billing clock, so events' accepted times move with the
 * subscriptions' time in tests and demos.
 */
@Module({
  imports: [MerchantAuthModule, BillingModule],
  controllers: [UsageController],
  // MeterRepository comes from BillingModule, which checks plans' usage components against the meters
  providers: [UsageEventStore, UsageService],
  exports: [UsageService],
})
export class UsageModule {}
