import type { apiKeys } from '@stampcard/db';

/** A key as lists show it: never the key, nor its hash; `keyPrefix` (its first 9 characters) recognises it. */
export function serializeApiKey(k: typeof apiKeys.$inferSelect) {
  return {
    id: k.id,
    userId: k.userId,
    keyPrefix: k.keyPrefix,
    createdAt: k.createdAt.getTime(),
    revokedAt: k.revokedAt?.getTime() ?? null,
  };
}
