import { users } from '@stampcard/db';
import { eq } from 'drizzle-orm';
import { type Ctx, unitOfWork } from '../../../context';
import { requireUser } from '../lookup';
import { campaignAccess } from './access';
import type { UserInput } from './create';
import { serializeUser } from './serialize';

/** What an operator may change of a team member: its role and a MEMBER's campaign access. */
export type UserPatch = Partial<Pick<UserInput, 'role' | 'campaignIds'>>;

/**
 * Changes a user's role or campaign access (`campaignIds` replaces the list; an ADMIN keeps it stored but
 * reaches every campaign). The user's row is locked while the access is checked, so two changes apply one
 * after the other. Its keys follow at once: every process drops the principals it cached.
 */
export async function updateUser(ctx: Ctx, userId: string, patch: UserPatch) {
  const updated = await unitOfWork(ctx, async (tx) => {
    const user = await requireUser(tx, userId, true);
    const campaignIds =
      patch.campaignIds === undefined
        ? undefined
        : await campaignAccess(tx, user.accountId, patch.campaignIds);
    const change = { ...(patch.role ? { role: patch.role } : {}), ...(campaignIds ? { campaignIds } : {}) };
    if (Object.keys(change).length === 0) return serializeUser(user);
    const [row] = await tx.db.update(users).set(change).where(eq(users.id, userId)).returning();
    return serializeUser(row!);
  });
  // Cached principals are keyed by their keys' hashes, which are not at hand: every process drops them all.
  await ctx.cache?.invalidate('principal');
  return updated;
}
