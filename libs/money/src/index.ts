export * from './amount';
