import { type CampaignStatus, campaigns, rewards } from '@stampcard/db';
import { and, eq, inArray, sql } from 'drizzle-orm';
import type { Ctx } from '../../../context';
import { type CampaignRow, type RewardRow, serializeCampaignForOperator } from '../../../serialize';
import { requireAccount } from '../lookup';
import { type OperatorPageQuery, pageById } from '../page';

export type CampaignListQuery = OperatorPageQuery & { status?: CampaignStatus };

/**
 * An account's campaigns, every status (DELETED too), by id, cursor-paged (`pageById`), each as its create and
 * read answer it: with its settings and whole rewards, loaded for the page in one statement and counted in the
 * page's byte budget. 404 for an unknown account.
 */
export async function listCampaignsForOperator(ctx: Ctx, accountId: string, q: CampaignListQuery) {
  await requireAccount(ctx, accountId);
  const where = and(
    eq(campaigns.accountId, accountId),
    q.status ? eq(campaigns.status, q.status) : undefined,
  );
  // A campaign weighs its row and its rewards' (read through rewards_campaign_page_idx).
  const size = sql`octet_length(${campaigns}::text) + coalesce((
    select sum(octet_length(r::text)) from ${rewards} r where r.campaign_id = ${campaigns.id}), 0)`;
  const serialize = async (rows: CampaignRow[]) => {
    const ids = rows.map((c) => c.id);
    const rs = ids.length ? await ctx.db.select().from(rewards).where(inArray(rewards.campaignId, ids)) : [];
    const byCampaign = new Map<string, RewardRow[]>(ids.map((id) => [id, []]));
    for (const r of rs) byCampaign.get(r.campaignId)?.push(r);
    return rows.map((c) => serializeCampaignForOperator(c, byCampaign.get(c.id) ?? []));
  };
  return pageById(ctx, { table: campaigns, where, key: 'campaigns', serialize, size }, q);
}
