import { Global, Module } from '@nestjs/common';
import { NetworksModule } from '../networks/networks.module';
import { AuthFailureLimiter } from './auth-failure-limiter';
import { MerchantAuthGuard } from './merchant-auth.guard';
import { MerchantAuth } from './merchant-auth.service';
import { MerchantRepository } from './merchant.repository';
import { MeController } from './me.controller';
import { PayToPolicy } from './pay-to-policy';
import { PaymentsController } from './payments.controller';
import { RateLimiter } from './rate-limiter';
import { ReceivingAddressesController } from './receiving-addresses.controller';
import { WebhookSettingsController } from './webhooks/webhook-settings.controller';
import { WebhookRepository } from './webhooks/webhook.repository';

/**
 * Merchant accounts: API keys and the guard that checks them on /verify, /settle and /payments, per-key rate
 * limits (per client address in open mode), a merchant's read API (GET /payments), its receiving addresses and the
 * policy that keeps settlements to them (PayToPolicy), and signed webhooks: their settings and deliveries (sent, with
 * the notices other services publish on the merchant-notices queue, by FacilitatorWorkersModule in the worker role).
 * Global, so the guard can be used on any controller.
 */
@Global()
@Module({
  imports: [NetworksModule],
  controllers: [PaymentsController, MeController, ReceivingAddressesController, WebhookSettingsController],
  providers: [MerchantRepository, MerchantAuth, RateLimiter, AuthFailureLimiter, MerchantAuthGuard, PayToPolicy, WebhookRepository],
  exports: [MerchantAuth, RateLimiter, AuthFailureLimiter, MerchantAuthGuard, PayToPolicy, WebhookRepository],
})
export class MerchantsModule {}
