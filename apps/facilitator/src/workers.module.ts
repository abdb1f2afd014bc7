import { type DynamicModule, Module } from '@nestjs/common';
import type { FacilitatorConfig } from './config/facilitator.config';
import { Eip3009Module } from './eip3009/eip3009.module';
import { MppModule } from './mpp/mpp.module';
import { NetworksModule } from './networks/networks.module';
import { OutboxAcks } from './outbox/outbox-acks.consumer';
import { OutboxRelay, PaymentEventsQueuesModule } from './outbox/outbox.relay';
import { RefundSweep } from './refunds/refund-sweep';
import { RefundsModule } from './refunds/refunds.module';
import { MerchantNoticesConsumer, MerchantNoticesQueueModule } from './merchants/webhooks/merchant-notices.consumer';
import { WebhookDispatcher } from './merchants/webhooks/webhook-dispatcher';
import { ChannelEventsQueueModule, ChannelEventsRelay } from './sessions/channel-events.relay';
import { SessionSettlementProcessor, SessionSettlementQueueModule, SessionSettlementSchedule } from './sessions/session-settlement.worker';
import { SessionsModule } from './sessions/sessions.module';
import { SettlementModule } from './settlement/settlement.module';
import { SettlementWorker } from './settlement/settlement.worker';
import { SignerLeases } from './settlement/signer-leases';
import { StripeSweep } from './stripe/stripe-sweep';
import { RevocationWatcher } from './subscriptions/revocation-watcher';
import { SubscriptionCommandsQueueModule, SubscriptionCommandsWorker } from './subscriptions/subscription-commands.worker';
import { SubscriptionsModule } from './subscriptions/subscriptions.module';
import { Permit2UptoModule } from './upto/permit2-upto.module';
import {
  BatchOperationsFinisher,
  BatchOperationsProcessor,
  BatchOperationsQueueModule,
  BatchOperationsSchedule,
} from './x402/schemes/batch-settlement/batch-operations.finisher';
import { BatchSettlementModule } from './x402/schemes/batch-settlement/batch-settlement.module';

/**
 * Everything the facilitator runs in the background: the settlement worker and its signer leases (send, confirm,
 * recover), the Stripe sweep, the refund sweep, the outbox relay to the ledger and its acknowledgements and the channel-events relay (with
 * OUTBOX_PUBLISH), signed webhooks, the merchant-notices consumer, and (with SUBSCRIPTION_SEALING_KEYS) the
 * subscription commands worker and the revocation watcher, (with BATCH_SETTLEMENT_SENDER_KEY) the finisher of
 * pending batch-settlement operations, and (with a session payee key) the session channels' watch and settlement
 * schedule. Imported only by worker-role processes (FACILITATOR_ROLE worker or all;
 * see AppModule.forConfig): an api process has none of these providers, so it never consumes a queue, holds a wallet
 * lease or polls a table. What an api process needs of the same areas (the settlement queue's producer, the
 * repositories, the metrics read at scrape time) stays in their own modules. The queues are the app's QueueModule's.
 */
@Module({})
export class FacilitatorWorkersModule {
  static forConfig({
    outbox,
    subscriptions,
    batchSettlement,
    sessions,
  }: Pick<FacilitatorConfig, 'outbox' | 'subscriptions' | 'batchSettlement' | 'sessions'>): DynamicModule {
    return {
      module: FacilitatorWorkersModule,
      imports: [
        NetworksModule,
        Eip3009Module,
        Permit2UptoModule,
        SettlementModule,
        MppModule,
        RefundsModule,
        MerchantNoticesQueueModule,
        ...(outbox.publish ? [PaymentEventsQueuesModule, ChannelEventsQueueModule] : []),
        ...(subscriptions ? [SubscriptionsModule, SubscriptionCommandsQueueModule] : []),
        ...(batchSettlement ? [BatchSettlementModule, BatchOperationsQueueModule] : []),
        ...(sessions ? [SessionsModule, SessionSettlementQueueModule] : []),
      ],
      // SettlementWorker before SignerLeases: their init order is the one these had before the split.
      providers: [
        SettlementWorker,
        SignerLeases,
        StripeSweep,
        RefundSweep,
        ...(outbox.publish ? [OutboxRelay, OutboxAcks, ChannelEventsRelay] : []),
        WebhookDispatcher,
        MerchantNoticesConsumer,
        // subscription commands and revocations only where authorizations can be opened (SUBSCRIPTION_SEALING_KEYS)
        ...(subscriptions ? [SubscriptionCommandsWorker, RevocationWatcher] : []),
        // batch-settlement operations a /settle left pending and nobody asked about again (BATCH_SETTLEMENT_SENDER_KEY)
        ...(batchSettlement ? [BatchOperationsFinisher, BatchOperationsSchedule, BatchOperationsProcessor] : []),
        // session channels: watched, settled and idle-closed on a schedule, only with a payee key
        ...(sessions ? [SessionSettlementSchedule, SessionSettlementProcessor] : []),
      ],
    };
  }
}
