export * from './catalog';
export * from './channels';
export * from './consumers';
export * from './hand-off';
export * from './periodic';
export * from './queues';
export * from './redis';
export * from './watchdog';
