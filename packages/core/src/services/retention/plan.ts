import {
  defaultPartition,
  dropsAt,
  PARTITIONED_TABLES,
  type PartitionedTable,
  type RetentionPolicy,
  readPartitions,
} from '@stampcard/db';
import { sql } from 'drizzle-orm';
import type { Ctx } from '../../context';

const DAY_MS = 86_400_000;
/** Rows counted in a default partition at most: more shows as this many. */
export const WAITING_COUNTED = 100_000;

/**
 * What each partitioned table keeps and what the worker drops next: its partitions (oldest first, the first
 * one `from` null when it holds the rows from before partitioning), when each goes, how far ahead partitions are
 * made, and how many rows wait in the default partition (rows whose period had no partition yet: the worker
 * was away; it moves them when it makes that partition).
 */
export async function retentionOverview(ctx: Ctx, policy: RetentionPolicy) {
  const now = ctx.clock.now();
  const partitions = await readPartitions(ctx.db);
  const waiting = await ctx.db.execute<Record<PartitionedTable, number>>(
    sql.raw(
      `select ${Object.keys(PARTITIONED_TABLES)
        // Counted up to a bound: a statement as short with a backlog there as without.
        .map(
          (t) =>
            `(select count(*)::int from (select 1 from "${defaultPartition(t as PartitionedTable)}" limit ${WAITING_COUNTED}) w) as "${t}"`,
        )
        .join(', ')}`,
    ),
  );
  return (Object.keys(PARTITIONED_TABLES) as PartitionedTable[]).map((table) => {
    const t = PARTITIONED_TABLES[table];
    const own = partitions
      .filter((p) => p.table === table)
      .map((p) => ({
        name: p.name,
        from: p.from?.getTime() ?? null,
        to: p.to.getTime(),
        rows: Math.max(0, Math.round(p.rows)),
        bytes: p.bytes,
        dropsAt: dropsAt(p, policy).getTime(),
      }));
    const next = own.find((p) => p.dropsAt > now.getTime()) ?? own[0] ?? null;
    return {
      table,
      unit: t.unit,
      retentionDays: Math.round(policy[t.retention] / DAY_MS),
      partitions: own,
      nextDrop: next && { name: next.name, at: next.dropsAt },
      madeUntil: own.at(-1)?.to ?? null,
      /** Up to `WAITING_COUNTED`. */
      waitingInDefault: waiting[0]?.[table] ?? 0,
    };
  });
}

export type RetentionOverview = Awaited<ReturnType<typeof retentionOverview>>;

/** The database's size on disk, in bytes. */
export async function databaseSize(db: Ctx['db']): Promise<number> {
  const [row] = await db.execute<{ bytes: string }>(
    sql`select pg_database_size(current_database())::text as bytes`,
  );
  return Number(row?.bytes ?? 0);
}
