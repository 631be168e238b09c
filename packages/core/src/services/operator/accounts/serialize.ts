import type { accounts } from '@stampcard/db';

export function serializeAccount(a: typeof accounts.$inferSelect) {
  return {
    id: a.id,
    name: a.name,
    plan: a.plan,
    participantQuota: a.participantQuota,
    participantCount: a.participantCount,
    rateLimits: a.rateLimits,
    frameAncestors: a.frameAncestors,
    createdAt: a.createdAt.getTime(),
  };
}
