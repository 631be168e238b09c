import { rewards } from '@stampcard/db';
import { eq } from 'drizzle-orm';
import type { Ctx } from '../../../context';
import { serializeReward } from '../../../serialize';
import { requireCampaign } from '../lookup';
import { type OperatorPageQuery, pageById } from '../page';

/**
 * A campaign's rewards, whole, by id, cursor-paged (`pageById`; the campaign read shows them all, in display
 * order). Any campaign status; 404 for an unknown campaign.
 */
export async function listRewards(ctx: Ctx, campaignId: string, q: OperatorPageQuery) {
  await requireCampaign(ctx, campaignId);
  const where = eq(rewards.campaignId, campaignId);
  return pageById(
    ctx,
    { table: rewards, where, key: 'rewards', serialize: (rows) => rows.map(serializeReward) },
    q,
  );
}
