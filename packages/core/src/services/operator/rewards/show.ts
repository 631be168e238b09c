import { rewards } from '@stampcard/db';
import { and, eq } from 'drizzle-orm';
import type { Ctx } from '../../../context';
import { notFound } from '../../../errors';
import { serializeReward } from '../../../serialize';
import { requireCampaign } from '../lookup';

/** One reward of a campaign, whole; 404 for an unknown campaign, or a reward that is not one of its. */
export async function showReward(ctx: Ctx, campaignId: string, rewardId: string) {
  await requireCampaign(ctx, campaignId);
  const [row] = await ctx.db
    .select()
    .from(rewards)
    .where(and(eq(rewards.id, rewardId), eq(rewards.campaignId, campaignId)))
    .limit(1);
  if (!row) throw notFound(`Reward ${rewardId}`);
  return serializeReward(row);
}
