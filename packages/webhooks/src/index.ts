export * from './destination';
export * from './errors';
export * from './retry-after';
export * from './secret';
export * from './sign';
export * from './verify';
