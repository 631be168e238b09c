// The operator's verbs (`/admin/v1`), one file per verb, grouped by the entity they act on.
export * from './accounts/create';
export * from './accounts/serialize';
export * from './api-keys/create';
export * from './api-keys/revoke';
export * from './campaigns/create';
export * from './campaigns/show';
export * from './campaigns/update';
export * from './rewards/create';
export type { RewardInput } from './rewards/shape';
export * from './rewards/update';
export * from './users/create';
