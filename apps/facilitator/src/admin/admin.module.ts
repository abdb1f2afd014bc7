import { Module } from '@nestjs/common';
import { MerchantRepository } from '../merchants/merchant.repository';
import { WebhookRepository } from '../merchants/webhooks/webhook.repository';
import { MppSecrets } from '../mpp/mpp-secrets';
import { AdminMerchantsController } from './admin-merchants.controller';
import { AdminService } from './admin.service';
import { OperatorAuth, OperatorGuard } from './operator-auth';
import { QueuesBoard } from './queues-board';
import { WebhookDeliveriesRepository } from './webhook-deliveries.repository';

/**
 * The operator's API: merchants, their keys and webhooks under /admin/merchants, and bull-board at /admin/queues,
 * both behind OPERATOR_TOKEN (off, answering 404, without it). The auth-failure limiter comes from the global
 * MerchantsModule; the repositories and MppSecrets (stateless but for a short read cache) are provided here, so the
 * other modules' exports stay as they are.
 */
@Module({
  controllers: [AdminMerchantsController],
  providers: [MerchantRepository, WebhookRepository, WebhookDeliveriesRepository, MppSecrets, OperatorAuth, OperatorGuard, AdminService, QueuesBoard],
})
export class AdminModule {}
