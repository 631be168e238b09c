import { sql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDb, type TestDb } from '../../../test/support/db';
import { createDb } from '../src/client';
import { preparing } from '../src/prepared';
import { campaigns } from '../src/schema/index';

let testDb: TestDb;
beforeAll(async () => {
  testDb = await createTestDb();
});
afterAll(() => testDb?.drop());

/** The statements prepared on the one connection of a pool of one. */
const preparedOn = async (db: ReturnType<typeof drizzle>) =>
  (await db.execute<{ statement: string }>(sql`select statement from pg_prepared_statements`)).map(
    (r) => r.statement,
  );

describe('drizzle statements prepared (preparing)', () => {
  it('a statement with parameters is prepared once on its connection and reused, in and out of transactions', async () => {
    const handle = createDb(testDb.url, { max: 1 });
    try {
      const byId = (id: string) => handle.db.select().from(campaigns).where(sql`${campaigns.id} = ${id}`);
      await byId('cmp_a');
      await byId('cmp_b');
      await handle.db.transaction(async (tx) => {
        await tx.select().from(campaigns).where(sql`${campaigns.id} = ${'cmp_c'}`);
      });
      const statements = await preparedOn(handle.db);
      const selects = statements.filter((s) => s.includes('from "campaigns"'));
      // The same text three times, once prepared.
      expect(selects).toHaveLength(1);
    } finally {
      await handle.close();
    }
  });

  it('past its bound, a new text goes unprepared and still runs', async () => {
    const pool = postgres(testDb.url, { max: 1, onnotice: () => {} });
    const db = drizzle(preparing(pool, 2));
    try {
      for (let n = 1; n <= 4; n++) {
        const [row] = await db.execute<{ n: number }>(sql`select ${n}::int + ${sql.raw(String(n))} as n`);
        expect(row!.n).toBe(2 * n);
      }
      const statements = await preparedOn(db);
      // Two texts were prepared; the query reading them is a fifth text, past the bound too.
      expect(statements.filter((s) => s.includes('::int +'))).toHaveLength(2);
    } finally {
      await pool.end();
    }
  });

  it('behind a pooler in transaction mode nothing is prepared', async () => {
    const handle = createDb(testDb.url, { max: 1, pooler: 'transaction' });
    try {
      await handle.db.select().from(campaigns).where(sql`${campaigns.id} = ${'cmp_a'}`);
      expect(await preparedOn(handle.db)).toEqual([]);
    } finally {
      await handle.close();
    }
  });
});
