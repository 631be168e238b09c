export * from './any-of';
export * from './client';
export * from './connect';
export * from './idempotency';
export * from './migrate';
export * from './partitions';
export * from './replica';
export * from './schema/index';
