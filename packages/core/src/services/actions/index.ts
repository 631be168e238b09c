export * from './accept';
export * from './apply';
export * from './read';
export * from './stale';
export * from './trigger';
