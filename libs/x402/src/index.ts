export * from './canonical';
export * from './exact-evm';
export * from './headers';
export * from './networks';
export * from './reasons';
export * from './request';
export * from './responses';
export * from './schemas';
