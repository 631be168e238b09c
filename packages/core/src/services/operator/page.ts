import { and, asc, eq, type SQL, sql } from 'drizzle-orm';
import type { PgColumn, PgTable } from 'drizzle-orm/pg-core';
import type { Ctx } from '../../context';
import { firstLeftOut, itemsWithinBudget, pageWithinBudget } from '../../paging';

/** Where an operator list starts and how much it holds, as the API's query gives them. */
export type OperatorPageQuery = {
  /** The most items a page holds (1 to 100; the route bounds it). */
  limit: number;
  /** The `nextId` of the previous page: the id of the first item of this one (any id works as a position). */
  nextId?: string;
};

export type OperatorPage<K extends string, V> = { [key in K]: V[] } & {
  limit: number;
  nextId: string | null;
  more: boolean;
};

/**
 * One page of an operator list: the rows of `table` that `where` keeps, by id byte by byte (the same order
 * whatever the database's collation; each table has an index in that order), from `nextId` on. The order is
 * fixed, so a reader paging through sees every row that existed when it started exactly once, whatever is
 * added meanwhile. A page holds at most `limit` items and what fits in its byte budget: the window's rows are
 * sized in PostgreSQL (`pageWithinBudget`, the whole row as text) and only those the page may carry are loaded;
 * `itemsWithinBudget` then measures what they serialize to. `nextId` is the id of the first row left out.
 */
export async function pageById<Row, V, K extends string>(
  ctx: Ctx,
  table: PgTable & { id: PgColumn },
  where: SQL | undefined,
  page: OperatorPageQuery,
  key: K,
  serialize: (row: Row) => V,
): Promise<OperatorPage<K, V>> {
  const byteWiseId = sql`${table.id} collate "C"`;
  const window = ctx.db
    .select({
      id: sql<string>`${table.id}`.as('id'),
      size: sql<number>`octet_length(${table}::text)`.as('size'),
    })
    .from(table)
    .where(and(where, page.nextId === undefined ? undefined : sql`${byteWiseId} >= ${page.nextId}`))
    .orderBy(asc(byteWiseId))
    .limit(page.limit + 1)
    .as('window');
  const kept = pageWithinBudget(ctx, window, {
    order: sql`${window.id} collate "C"`,
    size: sql`${window.size}`,
    limit: page.limit,
  });
  const rows = (await ctx.db
    .select({ row: table, next: kept.rows.next })
    .from(kept.rows)
    .innerJoin(table, eq(table.id, kept.rows.id))
    .where(kept.within)
    .orderBy(asc(kept.rows.ord))) as unknown as { row: Row & { id: string }; next: string | null }[];
  const items = rows.map((r) => serialize(r.row));
  const shown = itemsWithinBudget(items);
  const nextId = firstLeftOut(
    rows.map((r) => ({ id: r.row.id, next: r.next })),
    shown,
  );
  return { [key]: items.slice(0, shown), limit: page.limit, nextId, more: nextId !== null } as OperatorPage<
    K,
    V
  >;
}
