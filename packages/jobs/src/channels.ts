/**
 * The Redis channel a worker announces the actions of each committed batch on (ids, comma-separated), so
 * that `?wait=true` requests wake at once instead of polling the ledger.
 */
export const appliedChannel = (prefix: string) => `${prefix}:actions-applied`;
