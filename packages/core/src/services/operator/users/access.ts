import { campaigns } from '@stampcard/db';
import { and, eq, inArray } from 'drizzle-orm';
import type { Ctx } from '../../../context';
import { validationError } from '../../../errors';

/**
 * A MEMBER's campaign access as stored: `campaignIds` without repeats, each a campaign of the account (any
 * other, unknown or of another account, is a 400 naming it).
 */
export async function campaignAccess(ctx: Ctx, accountId: string, campaignIds: string[]): Promise<string[]> {
  const ids = [...new Set(campaignIds)];
  if (ids.length === 0) return ids;
  const owned = await ctx.db
    .select({ id: campaigns.id })
    .from(campaigns)
    .where(and(eq(campaigns.accountId, accountId), inArray(campaigns.id, ids)));
  const missing = ids.filter((id) => !owned.some((o) => o.id === id));
  if (missing.length > 0) {
    throw validationError(
      missing.map((id) => ({
        location: 'body',
        param: 'campaignIds',
        value: id,
        msg: 'no such campaign in this account',
      })),
    );
  }
  return ids;
}
