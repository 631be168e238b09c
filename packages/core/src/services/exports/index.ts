export * from './loyalty-actions';
export * from './participants';
export * from './snapshot';
