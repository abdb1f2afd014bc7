// @mp/billing: the pure core of subscriptions (periods, trials, charge decisions, states, dunning, refunds, clock).
// No Nest, no database, no I/O: the ledger service owns the lifecycle and calls these.
export * from './periods';
export * from './clock';
export * from './subscription-state';
export * from './schedule';
export * from './renewal';
export * from './entitlement';
export * from './dunning';
export * from './refunds';
export * from './ap2';
