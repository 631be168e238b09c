import { events } from '@stampcard/db';
import { and, asc, eq, gt } from 'drizzle-orm';
import type { Ctx } from '../context';
import { notFound } from '../errors';

/**
 * A campaign's events, oldest first, for receivers to reconcile what their webhooks missed. Each is
 * `{ id, type, timestamp, data }`: the body a webhook delivery of it carries, plus the event id. Paged by
 * `after` (an event id from the previous page): one indexed query on (campaign, seq).
 */
export async function listCampaignEvents(
  ctx: Ctx,
  campaignId: string,
  page: { after?: string; limit: number },
) {
  let afterSeq = 0;
  if (page.after) {
    const [from] = await ctx.db
      .select({ seq: events.seq })
      .from(events)
      .where(and(eq(events.id, page.after), eq(events.campaignId, campaignId)));
    if (!from) throw notFound(`Event ${page.after} in campaign ${campaignId}`);
    afterSeq = from.seq;
  }
  const rows = await ctx.db
    .select({ id: events.id, type: events.type, createdAt: events.createdAt, data: events.data })
    .from(events)
    .where(and(eq(events.campaignId, campaignId), gt(events.seq, afterSeq)))
    .orderBy(asc(events.seq))
    .limit(page.limit + 1);
  const shown = rows.slice(0, page.limit);
  return {
    events: shown.map((e) => ({ id: e.id, type: e.type, timestamp: e.createdAt.getTime(), data: e.data })),
    more: rows.length > page.limit,
    nextAfter: shown.at(-1)?.id ?? null,
  };
}
