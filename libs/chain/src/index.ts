export * from './abi';
export * from './ecdsa';
export * from './errors';
export * from './gas';
export * from './manifest';
export * from './payer-proof';
export * from './registry';
export * from './signer';
