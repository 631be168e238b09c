export * from './ensure';
export * from './list';
export * from './lookup';
export * from './remove';
export * from './show';
export * from './update';
