export * from './past';
export * from './plan';
