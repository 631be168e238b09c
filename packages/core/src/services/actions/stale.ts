import { loyaltyActions } from '@stampcard/db';
import { and, asc, eq, sql } from 'drizzle-orm';
import type { Ctx } from '../../context';
import { queuedByIds } from '../queued-actions';

/** Accepted actions still QUEUED and older than `graceMs`: what the relay makes sure is in the queue. */
export async function findStaleQueuedActions(ctx: Ctx, graceMs: number, limit = 1000): Promise<string[]> {
  const cutoff = new Date(ctx.clock.now().getTime() - graceMs);
  const rows = await ctx.db
    .select({ id: loyaltyActions.id })
    .from(loyaltyActions)
    .where(
      and(
        eq(loyaltyActions.status, 'QUEUED'),
        sql`${loyaltyActions.createdAt} <= ${cutoff.toISOString()}::timestamptz`,
      ),
    )
    .orderBy(asc(loyaltyActions.createdAt))
    .limit(limit);
  return rows.map((r) => r.id);
}

/**
 * Of `ids`, the actions still QUEUED. The relay reads the ledger, then looks for the actions' jobs: a batch job
 * that applied its actions and was removed between the two reads hides them from the look-up, so the relay reads
 * their status again, after it, and queues only those still QUEUED.
 */
export async function stillQueuedActions(ctx: Ctx, ids: readonly string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const rows = await stillQueuedQuery(ctx.db, ids);
  const queued = new Set(rows.map((r) => r.id));
  return ids.filter((id) => queued.has(id));
}

/** `stillQueuedActions`'s statement: `ids` by primary key (`queuedByIds`). Exported for the test that reads its plan. */
export const stillQueuedQuery = (db: Ctx['db'], ids: readonly string[]) =>
  db.select({ id: loyaltyActions.id }).from(loyaltyActions).where(queuedByIds(ids));
