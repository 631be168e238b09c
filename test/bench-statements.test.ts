import { describe, expect, it } from 'vitest';
import { readSettings } from '../bench/settings';
import {
  foldQuery,
  readStatements,
  resetStatements,
  statementLines,
  statementsUnavailable,
  TEXT_MAX,
} from '../bench/statements';
import { useTestDb } from './support/use';

/**
 * `npm run bench -- --statements` against the real PostgreSQL: where `pg_stat_statements` is preloaded it
 * lists what this database ran since the reset; where it is not, the run is told how to load it before it
 * measures anything.
 */
const testDb = useTestDb();

describe('npm run bench -- --statements', () => {
  it('is off unless asked for', () => {
    expect(readSettings([]).statements).toBe(false);
    expect(readSettings(['--statements']).statements).toBe(true);
  });

  it('folds a statement onto one line of at most TEXT_MAX characters', () => {
    expect(foldQuery('select 1\n    from  t\twhere x = $1')).toBe('select 1 from t where x = $1');
    const long = foldQuery(`select ${'a, '.repeat(200)}b`);
    expect(long).toHaveLength(TEXT_MAX);
    expect(long.endsWith('…')).toBe(true);
  });

  it("reads this database's statements since the reset where the library is preloaded, and says how to load it where not", async () => {
    const sql = testDb.db.$client;
    const [setting] = await sql<
      { libs: string }[]
    >`select current_setting('shared_preload_libraries') as libs`;
    const why = await statementsUnavailable(sql);
    if (!setting!.libs.split(',').some((l) => l.trim() === 'pg_stat_statements')) {
      expect(why).toMatch(
        /cannot be read .*shared_preload_libraries = 'pg_stat_statements'.*restart PostgreSQL/,
      );
      return;
    }
    expect(why).toBeNull();
    await resetStatements(sql);
    for (let i = 0; i < 3; i++) await sql`select ${i}::int as bench_statements_probe`;
    // The bench's settle between phases is its own, not the service's: left out.
    await sql`create table if not exists bench_statements_settled (x int)`;
    await sql`vacuum (analyze) bench_statements_settled`;
    const read = await readStatements(sql);
    expect(read.top.some((r) => /^vacuum/i.test(r.query))).toBe(false);
    const probe = read.top.find((r) => r.query.includes('bench_statements_probe'));
    expect(probe).toMatchObject({ calls: 3, rows: 3 });
    expect(read.calls).toBeGreaterThanOrEqual(3);
    expect(statementLines('probe', read)[0]).toMatch(/^statements during probe: \d+ calls/);
    // After a reset, nothing of before is left.
    await resetStatements(sql);
    const after = await readStatements(sql);
    expect(after.top.find((r) => r.query.includes('bench_statements_probe'))).toBeUndefined();
  });
});
