export * from './any-of';
export * from './client';
export * from './connect';
export * from './migrate';
export * from './schema/index';
