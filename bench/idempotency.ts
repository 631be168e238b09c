/**
 * `npm run bench:idempotency [-- --claims N]`: what an `Idempotency-Key` costs a request in PostgreSQL. On a
 * database of its own, N keys (3,000 by default) are claimed and answered one after the other, as the API does
 * for a request that carries one: the claim (a transaction locking the key, pipelined with the statement that
 * reads its live row and inserts, `claimIdempotencyKey`) and the answer (`recordIdempotentAnswer`). Beside each,
 * the statements it replaced: an `INSERT … ON CONFLICT` and an `UPDATE` on an unpartitioned table keyed by
 * (scope, key). Two rounds; prints p50 and p99 of each, in ms, and `idempotency: …` with the second round's.
 */
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { claimIdempotencyKey, createDb, migrationsFolder, recordIdempotentAnswer } from '@stampcard/db';
import { drizzle } from 'drizzle-orm/postgres-js';
import { migrate } from 'drizzle-orm/postgres-js/migrator';
import { benchAdminUrl, createDatabase, databaseUrl, dropDatabase } from './database';
import { progress, round } from './util';

const { values } = parseArgs({ options: { claims: { type: 'string', default: '3000' } } });
const claims = Number(values.claims);
if (!Number.isInteger(claims) || claims < 100 || claims > 1_000_000)
  throw new Error('--claims: a whole number from 100 to 1,000,000');

const DAY_MS = 86_400_000;
const percentile = (xs: number[], p: number) =>
  round([...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) * p)]!, 3);

const admin = benchAdminUrl();
const name = `stampcard_idem_${Date.now().toString(36)}`;
await createDatabase(admin, name);
const { db, sql, close } = createDb(databaseUrl(admin, name), { max: 4 });
try {
  await migrate(drizzle(sql), { migrationsFolder });
  // The table as it was before migration 0025: one row per (scope, key), claimed by one upsert.
  await sql.unsafe(
    'create table keys_before (like idempotency_keys including defaults, primary key (scope, key))',
  );
  let line = '';
  for (const run of [1, 2]) {
    const now: number[] = [];
    const before: number[] = [];
    for (let i = 0; i < claims; i++) {
      const at = new Date();
      const claim = { scope: 'key:bench', key: `k-${run}-${i}`, claimToken: randomUUID(), startedAt: at };
      const expiresAt = new Date(at.getTime() + DAY_MS);
      let t = performance.now();
      const got = await claimIdempotencyKey(db, {
        ...claim,
        requestHash: 'h',
        method: 'POST',
        path: '/v1/campaign/c/loyalty-action',
        lockedUntil: new Date(at.getTime() + 30_000),
        expiresAt,
      });
      if (!got.claimed) throw new Error('a new key was not claimed');
      await recordIdempotentAnswer(db, claim, {
        status: 200,
        contentType: 'application/json',
        headers: {},
        body: '{}',
        subjects: [],
      });
      now.push(performance.now() - t);
      t = performance.now();
      await sql`
        insert into keys_before (scope, key, request_hash, method, path, state, claim_token, started_at,
          locked_until, expires_at)
        values (${claim.scope}, ${claim.key}, 'h', 'POST', '/v1/campaign/c/loyalty-action', 'RUNNING',
          ${claim.claimToken}, ${at.toISOString()}, ${at.toISOString()}, ${expiresAt.toISOString()})
        on conflict (scope, key) do update set state = excluded.state
          where keys_before.expires_at <= ${at.toISOString()}
        returning key`;
      await sql`
        update keys_before set state = 'DONE', response_status = 200, response_body = '{}',
          response_headers = '{}'::jsonb
        where scope = ${claim.scope} and key = ${claim.key} and claim_token = ${claim.claimToken}
          and state = 'RUNNING'
        returning key`;
      before.push(performance.now() - t);
    }
    line = `claims=${claims} p50=${percentile(now, 0.5)} p99=${percentile(now, 0.99)} beforeP50=${percentile(before, 0.5)} beforeP99=${percentile(before, 0.99)}`;
    progress(`round ${run}: claim and answer, ms: ${line}`);
  }
  console.log(`idempotency: ${line}`);
} finally {
  await close();
  await dropDatabase(admin, name);
}
