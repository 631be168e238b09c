export * from './accept';
export * from './accept-batch';
export * from './apply';
export * from './read';
export * from './stale';
export * from './trigger';
