export * from './boards';
export * from './buckets';
export * from './page';
export * from './ranks';
