export * from './backlog';
export * from './delivery';
export * from './endpoints';
export * from './fan-out';
export * from './messages';
export * from './views';
