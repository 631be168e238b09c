export * from './accounts';
export * from './actions';
export * from './campaigns';
export * from './fraud';
export * from './idempotency';
export * from './leaderboards';
export * from './participants';
export * from './webhooks';
