/**
 * `npm run bench:partition-migration [-- --rows N]`: how long the partitioning migrations hold an existing
 * database. A database of its own is migrated up to 0022, given N rows (1,000,000 by default) in each of
 * `events`, `webhook_messages`, `webhook_attempts`, `audit_log` and `idempotency_keys` (a day of keys),
 * vacuumed, then migrated through 0024 (0023 partitions the first four), timed, then through 0030 (0025
 * partitions the keys), timed, then the rest (0031 builds the fan-out's two indexes again), timed. Each migration
 * is one transaction holding the tables it changes: its time is their downtime (the API answers 503 for what needs
 * them meanwhile, after its statement timeout). Prints one line per step and
 * `partition-migration: rows=<N> seconds=<0023 and 0024> idempotencySeconds=<0025-0030> fanOutIndexSeconds=<0031>`.
 */
import { rmSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { connectPostgres, migrationsBefore, migrationsFolder } from '@stampcard/db';
import { drizzle } from 'drizzle-orm/postgres-js';
import { migrate } from 'drizzle-orm/postgres-js/migrator';
import { benchAdminUrl, createDatabase, databaseUrl, dropDatabase } from './database';
import { progress, round } from './util';

const { values } = parseArgs({ options: { rows: { type: 'string', default: '1000000' } } });
const rows = Number(values.rows);
if (!Number.isInteger(rows) || rows < 1 || rows > 50_000_000)
  throw new Error('--rows: a whole number of rows');

const admin = benchAdminUrl();
const name = `stampcard_partmig_${Date.now().toString(36)}`;
const url = databaseUrl(admin, name);
await createDatabase(admin, name);
const sql = connectPostgres(url, { max: 1, onnotice: () => {}, connection: { statement_timeout: 0 } });
const before = migrationsBefore('0023_partitions');
const beforeKeys = migrationsBefore('0025_idempotency_partitions');
const beforeFanOut = migrationsBefore('0031_fan_out_indexes');
try {
  await migrate(drizzle(sql), { migrationsFolder: before });
  progress(`migrated to 0022; seeding ${rows.toLocaleString('en')} rows in each of five tables`);
  const started = performance.now();
  await sql.unsafe(`
    insert into accounts (id, name, plan) values ('acct_bench', 'Bench', 'GROWTH');
    insert into campaigns (id, account_id, name, status, currency_iso)
      values ('benchcmp', 'acct_bench', 'Bench', 'IN_PROGRESS', 'USD');
    insert into webhook_endpoints (id, campaign_id, url, kind, secret, created_at, updated_at)
      values ('ep_bench', 'benchcmp', 'https://example.com/hooks', 'NOTIFY', 'whsec_x', now(), now());
    insert into events (id, campaign_id, type, data, created_at, dispatched_at)
      select 'evt_' || lpad(g::text, 20, '0'), 'benchcmp', 'LOYALTY_ACTION_APPLIED',
        jsonb_build_object('action', jsonb_build_object('id', 'act_' || g), 'participant',
          jsonb_build_object('id', 'p' || (g % 10000), 'email', 'p' || (g % 10000) || '@bench.test')),
        now() - (g || ' seconds')::interval, now()
      from generate_series(1, ${rows}) g;
    insert into webhook_messages (id, endpoint_id, campaign_id, event_id, event_type, status, attempts,
        next_attempt_at, created_at, updated_at, succeeded_at)
      select 'msg_' || lpad(g::text, 24, '0'), 'ep_bench', 'benchcmp', 'evt_' || lpad(g::text, 20, '0'),
        'LOYALTY_ACTION_APPLIED', 'SUCCEEDED', 1, now(), now() - (g || ' seconds')::interval, now(), now()
      from generate_series(1, ${rows}) g;
    insert into webhook_attempts (id, message_id, endpoint_id, attempted_at, status_code, latency_ms,
        response_excerpt, succeeded)
      select 'dlv_' || lpad(g::text, 20, '0'), 'msg_' || lpad(g::text, 24, '0'), 'ep_bench',
        now() - (g || ' seconds')::interval, 200, 12, 'ok', true
      from generate_series(1, ${rows}) g;
    insert into audit_log (at, account_id, campaign_id, actor_kind, actor_id, entity, entity_id, action, after)
      select now() - (g || ' seconds')::interval, 'acct_bench', 'benchcmp', 'API_KEY', 'key_bench', 'participant',
        'p' || g, 'CREATED', jsonb_build_object('email', 'p' || g || '@bench.test')
      from generate_series(1, ${rows}) g;
    insert into idempotency_keys (scope, key, request_hash, method, path, state, claim_token, response_status,
        response_content_type, response_body, started_at, locked_until, expires_at)
      select 'key:bench', 'k-' || g, md5(g::text), 'POST', '/v1/campaign/benchcmp/loyalty-action', 'DONE',
        md5(g::text), 200, 'application/json', '{"action":{"id":"act_' || g || '"}}',
        now() - ((g % 86400) || ' seconds')::interval, now(), now() + interval '1 day' - ((g % 86400) || ' seconds')::interval
      from generate_series(1, ${rows}) g;`);
  await sql.unsafe('vacuum analyze');
  progress(`seeded in ${round((performance.now() - started) / 1000, 1)} s`);
  const migrating = performance.now();
  await migrate(drizzle(sql), { migrationsFolder: beforeKeys });
  const seconds = round((performance.now() - migrating) / 1000, 2);
  const migratingKeys = performance.now();
  await migrate(drizzle(sql), { migrationsFolder: beforeFanOut });
  const keySeconds = round((performance.now() - migratingKeys) / 1000, 2);
  const migratingFanOut = performance.now();
  await migrate(drizzle(sql), { migrationsFolder });
  const fanOutSeconds = round((performance.now() - migratingFanOut) / 1000, 2);
  const [check] = await sql<{ n: string }[]>`select count(*)::text as n from events`;
  const [keys] = await sql<{ n: string }[]>`select count(*)::text as n from idempotency_keys`;
  if (Number(check!.n) !== rows || Number(keys!.n) !== rows)
    throw new Error(`events holds ${check!.n} rows and keys ${keys!.n} after the migrations, not ${rows}`);
  progress(
    `migrations 0023-0024 on ${rows.toLocaleString('en')} rows a table: ${seconds} s; 0025-0030 on as many keys: ${keySeconds} s; 0031 and later (the fan-out's indexes of events and messages): ${fanOutSeconds} s; every row still there`,
  );
  console.log(
    `partition-migration: rows=${rows} seconds=${seconds} idempotencySeconds=${keySeconds} fanOutIndexSeconds=${fanOutSeconds}`,
  );
} finally {
  rmSync(before, { recursive: true, force: true });
  rmSync(beforeKeys, { recursive: true, force: true });
  rmSync(beforeFanOut, { recursive: true, force: true });
  await sql.end({ timeout: 5 });
  await dropDatabase(admin, name);
}
