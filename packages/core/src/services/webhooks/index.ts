export * from './backlog';
export * from './delivery';
export * from './endpoints';
export * from './fan-out';
export * from './health';
export * from './messages';
export * from './scope';
export * from './views';
