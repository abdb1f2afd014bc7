// @mp/ledger — the double-entry rules, TigerBeetle's semantics over plain data (no Nest, Prisma or HTTP).
export * from './account-rules';
export * from './asset';
export * from './balances';
export * from './chart';
export * from './chains';
export * from './flags';
export * from './ids';
export * from './model';
export * from './results';
export * from './transfer-rules';
