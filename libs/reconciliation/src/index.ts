// @mp/reconciliation — the ledger against the chain and Stripe: matching, totals and readable reports (no Nest, Prisma or HTTP).
export * from './advice';
export * from './balances';
export * from './corrections';
export * from './csv';
export * from './history';
export * from './html/reference-links';
export * from './html/report-html';
export * from './json';
export * from './model';
export * from './over-refunds';
export * from './reconcile';
export * from './references';
export * from './totals';
