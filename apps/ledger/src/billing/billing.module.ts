import { Module } from '@nestjs/common';
import { MerchantAuthModule } from '../auth/merchant-auth.module';
import { PlanRepository } from './plan.repository';
import { PlansController } from './plans.controller';

/** Subscriptions (issue 13) over @mp/billing's rules: so far the merchants' plans, every route scoped by the merchant's API key. */
@Module({
  imports: [MerchantAuthModule],
  controllers: [PlansController],
  providers: [PlanRepository],
})
export class BillingModule {}
