export * from './canonical';
export * from './headers';
export * from './networks';
export * from './reasons';
export * from './request';
export * from './responses';
export * from './schemas';
export * from './wire-schemas';
