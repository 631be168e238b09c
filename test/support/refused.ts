import type { Tx } from '@stampcard/db';
import { sql } from 'drizzle-orm';
import { expect } from 'vitest';
import { expectErrorShape, type Reply } from './client';

/** Each table of the database: its row count and a hash of every row, so any write shows. */
export async function fingerprint(db: Tx): Promise<Record<string, string>> {
  const tables = await db.execute<{ name: string }>(
    sql`select tablename as name from pg_tables where schemaname = 'public' order by tablename`,
  );
  const parts = tables.map(
    ({ name }) =>
      `select '${name}' as t, count(*)::text || ':' || md5(coalesce(string_agg(x::text, '|' order by x::text), '')) as h from "${name}" x`,
  );
  const rows = await db.execute<{ t: string; h: string }>(sql.raw(parts.join(' union all ')));
  return Object.fromEntries(rows.map((r) => [r.t, r.h]));
}

/**
 * `expectRefused(send, status, code)` on a test stack or database: the request fails with the contract's error body for `status` and
 * `code`, and the database is exactly as it was before it.
 */
export function refusals(on: { ctx: { db: Tx } }) {
  return async function expectRefused(send: () => Promise<Reply>, status: number, code: string) {
    const before = await fingerprint(on.ctx.db);
    const reply = await send();
    const body = expectErrorShape(reply, status, code);
    expect(await fingerprint(on.ctx.db)).toEqual(before);
    return body;
  };
}
