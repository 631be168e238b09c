import type { Tx } from '@stampcard/db';
import type { Ctx } from '../../context';

/** Rows one page of an export reads: one statement, well inside the statement timeout. */
export const EXPORT_PAGE_ROWS = 1000;

/**
 * Reads a whole set of rows as of one moment: every page in one REPEATABLE READ, READ ONLY transaction (one
 * snapshot: rows added or changed meanwhile are not seen, none is seen twice), each page one statement from the
 * last row's key (`page(db, after)`, `EXPORT_PAGE_ROWS` at most, in key order), handed to `write` before the
 * next is read. `write` waits for the reader, so a slow reader slows the reading; one that stops reading for
 * longer than the connection's idle-in-transaction timeout ends the export with an error, and so does a
 * `write` that throws (the reader went away). Answers the rows read.
 */
export async function readSnapshot<Row>(
  ctx: Ctx,
  page: (db: Tx, after: Row | null) => Promise<Row[]>,
  write: (rows: Row[]) => Promise<void>,
): Promise<number> {
  return ctx.db.transaction(
    async (db) => {
      let after: Row | null = null;
      let total = 0;
      for (;;) {
        const rows = await page(db, after);
        if (rows.length > 0) await write(rows);
        total += rows.length;
        if (rows.length < EXPORT_PAGE_ROWS) return total;
        after = rows.at(-1)!;
      }
    },
    { isolationLevel: 'repeatable read', accessMode: 'read only' },
  );
}
