import { loyaltyActions } from '@stampcard/db';
import { and, asc, eq, sql } from 'drizzle-orm';
import type { Ctx } from '../../context';

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
