import { type DynamicModule, Module } from '@nestjs/common';
import { DefaultRequestHandler } from '@a2a-js/sdk/server';
import { MERCHANT_CONFIG, type MerchantConfig } from '../merchant.config';
import { agentCard } from './agent-card';
import { MerchantExecutor } from './merchant-executor';
import { PaidSkillsRequestHandler } from './paid-skills-request-handler';
import { PgTaskStore } from './pg-task-store';
import { PREPAID_LEDGER, PrepaidFlow } from './prepaid-flow';
import { PrepaidLedger } from '../prepaid/prepaid-ledger';
import { SKILLS, skillCatalog, type Skill } from './skills';
import { mppFacilitator } from '../mpp/mpp-paywall';
import { SubscriptionEntitlements } from '../subscriptions/entitlements';
import { MPP_FACILITATOR, SUBSCRIPTION_ENTITLEMENTS, SubscriptionFlow } from './subscription-flow';
import { TaskBusManager } from './task-bus-manager';
import { facilitatorClient, X402_FACILITATOR } from './x402/facilitator';
import { PaymentFlow } from './x402/payment-flow';
import { TaskPayments } from './x402/payment.repository';
import { PendingSettlements } from './x402/pending-settlements';

/** What the A2A routers serve (mountA2a): the SDK's request handler over our executor, task store and payments. */
export const A2A_REQUEST_HANDLER = Symbol('A2A_REQUEST_HANDLER');

/** The merchant's A2A agent. Needs PrismaService (DbModule) from the app. */
@Module({})
export class A2aModule {
  static forConfig(config: MerchantConfig): DynamicModule {
    return {
      module: A2aModule,
      providers: [
        { provide: MERCHANT_CONFIG, useValue: config },
        { provide: SKILLS, useValue: skillCatalog(config) },
        { provide: X402_FACILITATOR, useValue: facilitatorClient(config) },
        { provide: MPP_FACILITATOR, useValue: mppFacilitator(config) },
        {
          provide: SUBSCRIPTION_ENTITLEMENTS,
          useValue: config.subscription ? new SubscriptionEntitlements(config.subscription, config.facilitatorTimeoutMs) : null,
        },
        { provide: PREPAID_LEDGER, useValue: config.prepaid ? new PrepaidLedger(config.prepaid, config.facilitatorTimeoutMs) : null },
        SubscriptionFlow,
        PrepaidFlow,
        PgTaskStore,
        TaskPayments,
        PaymentFlow,
        PendingSettlements,
        MerchantExecutor,
        {
          provide: A2A_REQUEST_HANDLER,
          inject: [SKILLS, PgTaskStore, MerchantExecutor, TaskPayments, PaymentFlow],
          useFactory: (skills: ReadonlyMap<string, Skill>, tasks: PgTaskStore, executor: MerchantExecutor, payments: TaskPayments, flow: PaymentFlow) => {
            const sdk = new DefaultRequestHandler(agentCard(config, skills), tasks, executor, new TaskBusManager());
            return new PaidSkillsRequestHandler(sdk, skills, payments, flow);
          },
        },
      ],
      exports: [A2A_REQUEST_HANDLER],
    };
  }
}
