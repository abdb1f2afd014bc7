export * from './bootstrap';
export * from './config';
export * from './json-body';
export * from './problem';
export * from './problem.filter';
