export * from './read';
export * from './review';
export * from './submit';
