export * from './file';
export * from './read';
export * from './run';
export * from './start';
