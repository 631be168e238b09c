export * from './accounts';
export * from './actions';
export * from './campaigns';
export * from './participants';
export * from './webhooks';
