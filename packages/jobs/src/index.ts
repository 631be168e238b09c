export * from './catalog';
export * from './queues';
export * from './redis';
