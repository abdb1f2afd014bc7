import { type DynamicModule, Module } from '@nestjs/common';
import type { FacilitatorConfig } from '../config/facilitator.config';
import { MerchantRepository } from '../merchants/merchant.repository';
import { WebhookRepository } from '../merchants/webhooks/webhook.repository';
import { MppSecrets } from '../mpp/mpp-secrets';
import { AdminMerchantsController } from './admin-merchants.controller';
import { AdminService } from './admin.service';
import { OperatorAuth, OperatorGuard } from './operator-auth';
import { QUEUES_BOARD_QUEUES, QueuesBoard, servesQueuesBoard } from './queues-board';
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
export class AdminModule {
  /** With the queues bull-board shows where it is served; elsewhere none, so it opens no Redis connection of its own. */
  static forConfig(config: Pick<FacilitatorConfig, 'operatorToken' | 'role'>): DynamicModule {
    return { module: AdminModule, imports: servesQueuesBoard(config) ? QUEUES_BOARD_QUEUES : [] };
  }
}
