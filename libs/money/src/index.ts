export * from './amount';
export * from './currency';
export * from './transfer-authorization';
