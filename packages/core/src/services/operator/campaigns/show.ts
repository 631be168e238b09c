import { rewards } from '@stampcard/db';
import { eq } from 'drizzle-orm';
import type { Ctx } from '../../../context';
import { serializeCampaignForOperator } from '../../../serialize';
import { requireCampaign } from '../lookup';

export async function getCampaignForOperator(ctx: Ctx, campaignId: string) {
  const row = await requireCampaign(ctx, campaignId);
  const rs = await ctx.db.select().from(rewards).where(eq(rewards.campaignId, campaignId));
  return serializeCampaignForOperator(row, rs);
}
