import { systemClock, type Clock } from '@mp/billing';
import { ChainClock } from '@mp/chain';
import { LEDGER_CONFIG, type LedgerConfig } from '../ledger.config';

/** Where subscriptions read the time: systemClock in the app, a ManualClock in tests that walk through periods. */
export const BILLING_CLOCK = Symbol('BILLING_CLOCK');

/** CLOCK_RPC_URL (development only): the chain's time, so a demo or a benchmark moves the ledger and the chain together. */
export const billingClockProvider = {
  provide: BILLING_CLOCK,
  inject: [LEDGER_CONFIG],
  useFactory: async ({ billing }: LedgerConfig): Promise<Clock> => {
    if (!billing.clockRpcUrl) return systemClock;
    const chain = await new ChainClock(billing.clockRpcUrl).start();
    return { now: () => new Date(chain.nowMs()), onModuleDestroy: () => chain.stop() } as Clock;
  },
};
