export * from './catalog';
export * from './consumers';
export * from './periodic';
export * from './queues';
export * from './redis';
