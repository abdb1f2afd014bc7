import { Global, Module } from '@nestjs/common';
import { AuthFailureLimiter } from './auth-failure-limiter';
import { MerchantAuthGuard } from './merchant-auth.guard';
import { MerchantAuth } from './merchant-auth.service';
import { MerchantRepository } from './merchant.repository';
import { MeController } from './me.controller';
import { PaymentsController } from './payments.controller';
import { RateLimiter } from './rate-limiter';
import { MerchantNoticesConsumer } from './webhooks/merchant-notices.consumer';
import { WebhookDispatcher } from './webhooks/webhook-dispatcher';
import { WebhookRepository } from './webhooks/webhook.repository';

/**
 * Merchant accounts: API keys and the guard that checks them on /verify, /settle and /payments, per-key rate
 * limits, a merchant's read API (GET /payments), and signed webhooks (sent by the worker role): final payment events
 * and the notices other services publish on the merchant-notices queue. Global, so the guard can be used on any
 * controller.
 */
@Global()
@Module({
  controllers: [PaymentsController, MeController],
  providers: [MerchantRepository, MerchantAuth, RateLimiter, AuthFailureLimiter, MerchantAuthGuard, WebhookRepository, WebhookDispatcher, MerchantNoticesConsumer],
  exports: [MerchantAuth, RateLimiter, AuthFailureLimiter, MerchantAuthGuard],
})
export class MerchantsModule {}
