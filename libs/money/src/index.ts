export * from './amount';
export * from './currency';
