import { type SQL, type SQLWrapper, type Subquery, sql } from 'drizzle-orm';
import type { Ctx } from './context';

/**
 * The bytes one list page may take on the wire: a page stops adding items before its JSON would pass this, so a
 * page is at most this size, or one item alone when that item is larger (a page always carries at least one,
 * so paging always moves on). Items at their field limits (a Participant about 90 KB, a form submission
 * 1.6 MB) would otherwise make a page of 100 several megabytes; a page of ordinary items never meets it.
 */
export const PAGE_BUDGET_BYTES = 1024 * 1024;

/**
 * Room kept in the budget for what a page carries besides its items: its braces and field names, `limit`,
 * `nextId`/`nextAfter` and `more` (under 150 bytes today).
 */
const PAGE_ENVELOPE_BYTES = 1024;

/** The longest JSON number (`-1.7976931348623157e+308`). */
const NUMBER_AT_MOST = 24;

/**
 * An upper bound of `Buffer.byteLength(JSON.stringify(value))`, found without serializing: a string's UTF-16
 * unit is at most six bytes in JSON (`\u0001`, a lone surrogate's `\udc00`; UTF-8 takes at most three), a
 * number at most 24 characters, a Date its 26.
 */
export function jsonBytesAtMost(value: unknown): number {
  switch (typeof value) {
    case 'string':
      return 2 + 6 * value.length;
    case 'number':
      return NUMBER_AT_MOST;
    case 'boolean':
      return 5;
    case 'object': {
      if (value === null) return 4;
      if (value instanceof Date) return 26;
      if (Array.isArray(value)) {
        let bytes = 2;
        // An element JSON leaves out (undefined, a function) is written as null.
        for (const v of value) bytes += Math.max(jsonBytesAtMost(v), 4) + 1;
        return bytes;
      }
      const toJSON = (value as { toJSON?: unknown }).toJSON;
      if (typeof toJSON === 'function') return jsonBytesAtMost(toJSON.call(value));
      let bytes = 2;
      // for…in rather than Object.entries, which builds an array per field and made the walk as slow as
      // serializing. An inherited enumerable field JSON would leave out only makes the bound larger.
      for (const k in value)
        bytes += 4 + 6 * k.length + jsonBytesAtMost((value as Record<string, unknown>)[k]);
      return bytes;
    }
    default:
      return 0;
  }
}

/**
 * How many of `items` (serialized, in page order) a page carries: the longest prefix whose JSON, with the
 * commas between items and the page's envelope, stays within `budget`, and at least one. The caller ends the
 * page after them exactly as it ends one cut by its `limit`: `more` true and the cursor of the next item (or
 * of the last one carried, for the lists paged by `after`).
 *
 * The response is serialized once, by the route; this does not serialize it again when it need not. An
 * upper bound (`jsonBytesAtMost`, a walk of the items' fields) settles the usual page: 100 ordinary
 * participants (1.5 KB each) are bounded in 0.1 to 0.2 ms, where measuring them exactly (`JSON.stringify` and
 * `Buffer.byteLength` of each) took 0.8 to 1 ms, more than the route's own serialization of the whole page
 * (0.5 ms). Only a page whose bound passes the budget, so at least a sixth of it in real bytes, is measured
 * exactly: each item by `JSON.stringify` once, up to the one that would pass the budget, so the exact path
 * serializes at most the budget and one item.
 *
 * @param budget - the page's size limit in bytes. @defaultValue `PAGE_BUDGET_BYTES`
 */
export function itemsWithinBudget<T>(items: readonly T[], budget: number = PAGE_BUDGET_BYTES): number {
  let bound = PAGE_ENVELOPE_BYTES;
  for (const item of items) {
    // One more for the comma that separates it from the item before.
    bound += jsonBytesAtMost(item) + 1;
    if (bound > budget) break;
  }
  if (bound <= budget) return items.length;
  let bytes = PAGE_ENVELOPE_BYTES;
  for (let i = 0; i < items.length; i++) {
    bytes += Buffer.byteLength(JSON.stringify(items[i])) + 1;
    if (bytes > budget) return Math.max(i, 1);
  }
  return items.length;
}

/**
 * The read side of the page budget: which rows of a page's window its statement loads. `window` is the list's
 * next `limit` + 1 rows from the cursor, in page order, as a subquery selecting each row's `id` and the columns
 * `order` and `size` read (its large columns stay in PostgreSQL: only what the outer statement selects is sent).
 * Its rows are numbered in page order (`ord`), each knows the id of the row after it in the window (`next`),
 * and a row is kept (`within`) when it is one of the first `limit` and the sizes of the rows before it add up
 * to less than `budget`: the rows within the budget, the first that passes it (which `itemsWithinBudget` may
 * still carry, and always does when it is the first), and nothing after. The page's statement joins its table
 * to these by id (a primary-key look-up a row), `where(within)`, ordered by `ord`: one request for 100 items at
 * their field limits loads about the budget and one item into the API process, where it loaded all 101 before
 * (150 MB of events, nearly the API's 160 MB heap). PostgreSQL still reads the window's rows to size them, as
 * it converted them to send them before. `firstLeftOut` then says where the next page starts.
 *
 * @param size - what a row loads, in bytes, or more (`octet_length` of its large columns as text).
 * @param budget - @defaultValue `PAGE_BUDGET_BYTES`
 */
export function pageWithinBudget(
  ctx: Ctx,
  window: Subquery & { id: SQLWrapper },
  o: { order: SQL; size: SQL; limit: number; budget?: number },
) {
  const byPage = sql`order by ${o.order}`;
  const rows = ctx.db
    .select({
      id: sql<string>`${window.id}`.as('page_id'),
      ord: sql<number>`row_number() over (${byPage})`.as('page_ord'),
      next: sql<string | null>`lead(${window.id}) over (${byPage})`.as('page_next'),
      before:
        sql<number>`coalesce(sum(${o.size}) over (${byPage} rows between unbounded preceding and 1 preceding), 0)`.as(
          'page_before',
        ),
    })
    .from(window)
    .as('kept');
  const within = sql`${rows.ord} <= ${o.limit} and ${rows.before} < ${o.budget ?? PAGE_BUDGET_BYTES}`;
  return { rows, within };
}

/**
 * The id of the first item a page left out, which starts the next page (null when the list ends there): the
 * row after the `shown` ones the page carried, or, when it carried every row it loaded, the `next` of the last.
 */
export function firstLeftOut(
  rows: readonly { id: string; next: string | null }[],
  shown: number,
): string | null {
  return shown < rows.length ? rows[shown]!.id : (rows.at(-1)?.next ?? null);
}
