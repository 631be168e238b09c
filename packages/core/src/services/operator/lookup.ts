import { accounts, apiKeys, campaigns, rewards, users } from '@stampcard/db';
import { and, eq } from 'drizzle-orm';
import type { PgColumn, PgTable } from 'drizzle-orm/pg-core';
import type { Ctx } from '../../context';
import { notFound, validationError } from '../../errors';

/** Look-ups the operator's verbs share: each throws the domain error of what it names being absent. */

/** The row of `table` with this id (locked FOR UPDATE when `lock`); 404 naming it as `what` when absent. */
async function requireById<T extends PgTable & { id: PgColumn }>(
  ctx: Ctx,
  table: T,
  id: string,
  what: string,
  lock = false,
): Promise<T['$inferSelect']> {
  const q = ctx.db
    .select()
    .from(table as PgTable)
    .where(eq(table.id, id))
    .limit(1);
  const [row] = lock ? await q.for('update') : await q;
  if (!row) throw notFound(`${what} ${id}`);
  return row as T['$inferSelect'];
}

export const requireAccount = (ctx: Ctx, accountId: string) =>
  requireById(ctx, accounts, accountId, 'Account');

export const requireUser = (ctx: Ctx, userId: string, lock = false) =>
  requireById(ctx, users, userId, 'User', lock);

export const requireApiKey = (ctx: Ctx, keyId: string) => requireById(ctx, apiKeys, keyId, 'API key');

export const requireCampaign = (ctx: Ctx, campaignId: string, lock = false) =>
  requireById(ctx, campaigns, campaignId, 'Campaign', lock);

export async function assertRewardInCampaign(ctx: Ctx, campaignId: string, rewardId: string, param: string) {
  const [r] = await ctx.db
    .select({ id: rewards.id })
    .from(rewards)
    .where(and(eq(rewards.id, rewardId), eq(rewards.campaignId, campaignId)))
    .limit(1);
  if (!r)
    throw validationError([
      { location: 'body', param, value: rewardId, msg: 'no such reward in this campaign' },
    ]);
}
