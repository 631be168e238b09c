import { accounts, campaigns, rewards } from '@stampcard/db';
import { and, eq } from 'drizzle-orm';
import type { Ctx } from '../../context';
import { notFound, validationError } from '../../errors';

/** Look-ups the operator's verbs share: each throws the domain error of what it names being absent. */

export async function requireAccount(ctx: Ctx, accountId: string) {
  const [row] = await ctx.db.select().from(accounts).where(eq(accounts.id, accountId)).limit(1);
  if (!row) throw notFound(`Account ${accountId}`);
  return row;
}

export async function requireCampaign(ctx: Ctx, campaignId: string, lock = false) {
  const q = ctx.db.select().from(campaigns).where(eq(campaigns.id, campaignId)).limit(1);
  const [row] = lock ? await q.for('update') : await q;
  if (!row) throw notFound(`Campaign ${campaignId}`);
  return row;
}

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
