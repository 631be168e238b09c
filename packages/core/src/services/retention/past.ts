import { type PartitionedTable, readPartitions } from '@stampcard/db';
import type { Ctx } from '../../context';
import { DomainError, notFound } from '../../errors';
import { idTime } from '../../ids';

/**
 * Since when `table` keeps its rows: the start of its oldest partition, or null while its first one (the
 * rows from before partitioning) is still there, so nothing was dropped yet.
 */
export async function retainedFrom(ctx: Ctx, table: PartitionedTable): Promise<Date | null> {
  const oldest = (await readPartitions(ctx.db)).find((p) => p.table === table);
  return oldest?.from ?? null;
}

/**
 * The 404 for `what` (an event, a webhook message) looked up by an `id` that is not there: when the id carries
 * its time (`idTime`) and that time is older than what `table` keeps, it says so: the row was dropped with its
 * week, past retention (`reason: PAST_RETENTION`, `retainedFrom` in UTC ms), rather than that it never
 * existed. An id that carries no time (made before partitioning) gets the plain 404.
 */
export async function missing(
  ctx: Ctx,
  table: PartitionedTable,
  what: string,
  id: string,
): Promise<DomainError> {
  const at = idTime(id);
  const from = at === null ? null : await retainedFrom(ctx, table);
  if (at === null || from === null || at >= from) return notFound(what);
  return new DomainError(
    'NOT_FOUND',
    `${what} is past retention: rows are kept from ${from.toISOString()} (see EVENT_RETENTION_DAYS)`,
    { reason: 'PAST_RETENTION', retainedFrom: from.getTime() },
  );
}
