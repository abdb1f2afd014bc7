export * from './abi';
export * from './ecdsa';
export * from './errors';
export * from './gas';
export * from './manifest';
export * from './registry';
export * from './signer';
export * from './payer-proof';
