import { events } from '@stampcard/db';
import { and, asc, eq, sql } from 'drizzle-orm';
import type { Ctx } from '../context';
import { notFound } from '../errors';

/**
 * A campaign's events, oldest first, for receivers to reconcile what their webhooks missed. Each is
 * `{ id, type, timestamp, data }`: the body a webhook delivery of it carries, plus the event id. Paged by
 * `after` (an event id from the previous page), in one indexed query on (campaign, transaction, seq).
 *
 * Only events of transactions older than every transaction still running are shown, in (transaction, seq)
 * order: whatever commits later has a later place in that order, so a reader that moved its cursor past
 * an event can never miss one that commits afterwards. A page is at most a few milliseconds behind.
 */
export async function listCampaignEvents(
  ctx: Ctx,
  campaignId: string,
  page: { after?: string; limit: number },
) {
  let from = sql`true`;
  if (page.after) {
    const [cursor] = await ctx.db
      .select({ seq: events.seq, txId: events.txId })
      .from(events)
      .where(and(eq(events.id, page.after), eq(events.campaignId, campaignId)));
    if (!cursor) throw notFound(`Event ${page.after} in campaign ${campaignId}`);
    from = sql`(${events.txId}, ${events.seq}) > (${cursor.txId}::xid8, ${cursor.seq})`;
  }
  const rows = await ctx.db
    .select({ id: events.id, type: events.type, createdAt: events.createdAt, data: events.data })
    .from(events)
    .where(
      and(
        eq(events.campaignId, campaignId),
        from,
        sql`${events.txId} < pg_snapshot_xmin(pg_current_snapshot())`,
      ),
    )
    .orderBy(asc(events.txId), asc(events.seq))
    .limit(page.limit + 1);
  const shown = rows.slice(0, page.limit);
  return {
    events: shown.map((e) => ({ id: e.id, type: e.type, timestamp: e.createdAt.getTime(), data: e.data })),
    more: rows.length > page.limit,
    nextAfter: shown.at(-1)?.id ?? null,
  };
}
