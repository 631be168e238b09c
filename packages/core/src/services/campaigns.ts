import { campaigns, rewards } from '@stampcard/db';
import { and, asc, eq, inArray, ne } from 'drizzle-orm';
import type { Ctx } from '../context';
import { type CampaignRow, type RewardRow, serializeCampaign } from '../serialize';
import type { Principal } from './auth';

async function rewardsByCampaign(ctx: Ctx, ids: string[]): Promise<Map<string, RewardRow[]>> {
  const map = new Map<string, RewardRow[]>(ids.map((id) => [id, []]));
  if (ids.length === 0) return map;
  const rows = await ctx.db.select().from(rewards).where(inArray(rewards.campaignId, ids));
  for (const r of rows) map.get(r.campaignId)?.push(r);
  return map;
}

/** The caller's campaigns, DELETED ones left out; a MEMBER sees the campaigns it has API access to. */
export async function listCampaigns(ctx: Ctx, p: Principal) {
  const filters = [eq(campaigns.accountId, p.accountId), ne(campaigns.status, 'DELETED')];
  if (p.role !== 'ADMIN') {
    if (p.campaignIds.length === 0) return [];
    filters.push(inArray(campaigns.id, p.campaignIds));
  }
  const rows = await ctx.db
    .select()
    .from(campaigns)
    .where(and(...filters))
    .orderBy(asc(campaigns.createdAt), asc(campaigns.id));
  const rs = await rewardsByCampaign(
    ctx,
    rows.map((r) => r.id),
  );
  return rows.map((c) => serializeCampaign(c, rs.get(c.id) ?? []));
}

export async function showCampaign(ctx: Ctx, campaign: CampaignRow) {
  const rs = await rewardsByCampaign(ctx, [campaign.id]);
  return serializeCampaign(campaign, rs.get(campaign.id) ?? []);
}
