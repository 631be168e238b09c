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

/**
 * How many of `items` (serialized, in page order) a page carries: the longest prefix whose JSON, with the
 * commas between items and the page's envelope, stays within `budget`, and at least one. The caller ends the
 * page after them exactly as it ends one cut by its `limit`: `more` true and the cursor of the next item (or
 * of the last one carried, for the lists paged by `after`).
 *
 * Each item is measured by `JSON.stringify` once, exactly, in UTF-8 bytes. A 100-item page of ordinary
 * participants (about 2 KB each) costs about a millisecond more for it; an estimate by walking each item's
 * fields would cost about as much as the native serializer does, and a conservative one (six bytes a
 * character) would cut pages of ordinary text at a sixth of the budget.
 *
 * @param budget - the page's size limit in bytes. @defaultValue `PAGE_BUDGET_BYTES`
 */
export function itemsWithinBudget<T>(items: readonly T[], budget: number = PAGE_BUDGET_BYTES): number {
  let bytes = PAGE_ENVELOPE_BYTES;
  for (let i = 0; i < items.length; i++) {
    // One more for the comma that separates it from the item before.
    bytes += Buffer.byteLength(JSON.stringify(items[i])) + 1;
    if (bytes > budget) return Math.max(i, 1);
  }
  return items.length;
}
