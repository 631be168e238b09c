export * from './participants';
export * from './snapshot';
