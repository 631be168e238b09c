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

/** An operator list: which rows of which table, and what a page shows of them. */
export type OperatorList<T extends PgTable & { id: PgColumn }, V, K extends string> = {
  table: T;
  /** The list's filters; undefined: every row. */
  where: SQL | undefined;
  /** The page's field that holds the items. */
  key: K;
  /** The items of a page's rows, in their order (one statement for the page if it loads more). */
  serialize: (rows: T['$inferSelect'][]) => V[] | Promise<V[]>;
  /**
   * What an item weighs in bytes, or more, as SQL on the table's row (what `serialize` loads besides the row
   * must count too). @defaultValue the row as text
   */
  size?: SQL;
};

/**
 * One page of an operator list: the rows of `list.table` that `list.where` keeps, by id byte by byte (the same
 * order whatever the database's collation; each list has an index in that order), from `nextId` on. The order
 * is fixed, so a reader paging through sees every row that existed when it started exactly once, whatever is
 * added meanwhile. A page holds at most `limit` items and what fits in its byte budget: the window's rows are
 * sized in PostgreSQL (`pageWithinBudget`) and only those the page may carry are loaded; `itemsWithinBudget`
 * then measures what they serialize to. `nextId` is the id of the first row left out.
 */
export async function pageById<T extends PgTable & { id: PgColumn }, V, K extends string>(
  ctx: Ctx,
  list: OperatorList<T, V, K>,
  page: OperatorPageQuery,
): Promise<OperatorPage<K, V>> {
  // The statements see a table (drizzle cannot check a generic one): the rows are typed by `T` below.
  const table: PgTable & { id: PgColumn } = list.table;
  const byteWiseId = sql`${table.id} collate "C"`;
  const window = ctx.db
    .select({
      id: sql<string>`${table.id}`.as('id'),
      size: sql<number>`${list.size ?? sql`octet_length(${table}::text)`}`.as('size'),
    })
    .from(table)
    .where(and(list.where, page.nextId === undefined ? undefined : sql`${byteWiseId} >= ${page.nextId}`))
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
    .orderBy(asc(kept.rows.ord))) as unknown as {
    row: T['$inferSelect'] & { id: string };
    next: string | null;
  }[];
  const items = await list.serialize(rows.map((r) => r.row));
  const shown = itemsWithinBudget(items);
  const nextId = firstLeftOut(
    rows.map((r) => ({ id: r.row.id, next: r.next })),
    shown,
  );
  const answer = { [list.key]: items.slice(0, shown), limit: page.limit, nextId, more: nextId !== null };
  return answer as OperatorPage<K, V>;
}
