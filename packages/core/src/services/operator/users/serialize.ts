import type { users } from '@stampcard/db';

export function serializeUser(u: typeof users.$inferSelect) {
  return {
    id: u.id,
    accountId: u.accountId,
    email: u.email,
    role: u.role,
    campaignIds: u.campaignIds,
    createdAt: u.createdAt.getTime(),
  };
}
