export * from './ensure';
export * from './fraud';
export * from './list';
export * from './lookup';
export * from './points';
export * from './remove';
export * from './show';
export * from './update';
