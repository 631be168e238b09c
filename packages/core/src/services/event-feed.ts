import { erasures, events } from '@stampcard/db';
import { and, asc, eq, sql } from 'drizzle-orm';
import type { Ctx } from '../context';
import { firstLeftOut, itemsWithinBudget, pageWithinBudget } from '../paging';
import { shownData } from '../rules/erasure';
import { sentEventData } from '../rules/event-data';
import { runningErasureOfEvent } from './participants/erase';
import { missing } from './retention/past';

/**
 * A campaign's events, oldest first, for receivers to reconcile what their webhooks missed. Each is
 * `{ id, type, timestamp, data }`: the body a webhook delivery of it carries, plus the event id. Paged by
 * `after` (an event id from the previous page), in one indexed query on (campaign, transaction, seq).
 *
 * Only events of transactions older than every transaction still running that could write one are shown,
 * in (transaction, seq) order: whatever commits later has a later place in that order, so a reader that
 * moved its cursor past an event can never miss one that commits afterwards. A page is at most a few
 * milliseconds behind, unless a transaction that has written something in this database stays open: the
 * feed then stops before anything that began after it, until it ends (see `FEED_HORIZON`). A page holds at
 * most `limit` events, and what fits in its byte budget (`itemsWithinBudget`). An event of a deleted
 * participant whose erasure has not reached it yet is shown erased.
 */
/**
 * The first transaction id the feed may not show yet: the oldest transaction still running in this
 * statement's snapshot, leaving out those of other databases of the cluster (they cannot write this
 * database's events; before, one long transaction anywhere in the cluster froze every feed), or the
 * snapshot's xmax when none is left. A transaction whose database cannot be seen (it ended meanwhile, or
 * belongs to a role whose sessions this one may not see) is kept: unknown holds the feed, never skips it.
 * Read-only transactions have no id and never hold it (pg_dump's, a long report's).
 */
const FEED_HORIZON = sql`(
  with snap as (select pg_current_snapshot() as s)
  select coalesce(
    (select min(x) from snap, pg_snapshot_xip(snap.s) as x
      where xid(x) not in (
        select backend_xid from pg_stat_activity
        where backend_xid is not null
          and datid <> (select oid from pg_database where datname = current_database()))
        and xid(x) not in (
          select transaction from pg_prepared_xacts where database <> current_database())),
    (select pg_snapshot_xmax(s) from snap)))`;

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
    // An event past retention was dropped with its week: the feed says so, and where it starts now.
    if (!cursor)
      throw await missing(ctx, 'events', `Event ${page.after} in campaign ${campaignId}`, page.after);
    from = sql`(${events.txId}, ${events.seq}) > (${cursor.txId}::xid8, ${cursor.seq})`;
  }
  // The window is sized in PostgreSQL; only the events the page may carry are loaded (`pageWithinBudget`).
  const window = ctx.db
    .select({ id: events.id, txId: events.txId, seq: events.seq, data: events.data })
    .from(events)
    .where(and(eq(events.campaignId, campaignId), from, sql`${events.txId} < ${FEED_HORIZON}`))
    .orderBy(asc(events.txId), asc(events.seq))
    .limit(page.limit + 1)
    .as('window');
  const kept = pageWithinBudget(ctx, window, {
    order: sql`${window.txId}, ${window.seq}`,
    size: sql`octet_length(${window.data}::text)`,
    limit: page.limit,
  });
  const rows = await ctx.db
    .select({
      id: events.id,
      type: events.type,
      createdAt: events.createdAt,
      data: events.data,
      erasing: erasures.participantId,
      next: kept.rows.next,
    })
    .from(kept.rows)
    .innerJoin(events, eq(events.id, kept.rows.id))
    .leftJoin(erasures, runningErasureOfEvent)
    .where(kept.within)
    .orderBy(asc(kept.rows.ord));
  const items = rows.map((e) => ({
    id: e.id,
    type: e.type,
    timestamp: e.createdAt.getTime(),
    data: sentEventData(shownData(e.data, e.erasing)),
  }));
  const shown = items.slice(0, itemsWithinBudget(items));
  return {
    events: shown,
    more: firstLeftOut(rows, shown.length) !== null,
    nextAfter: shown.at(-1)?.id ?? null,
  };
}
