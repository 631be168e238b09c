import { sql } from 'drizzle-orm';
import type postgres from 'postgres';
import type { Tx } from './client';
import { IDEMPOTENCY_TTL_MS } from './schema/idempotency';

/** A partition's span: a day, a week (from Monday 00:00 UTC) or a calendar month (UTC). */
export type PartitionUnit = 'day' | 'week' | 'month';

/**
 * The tables partitioned by time (migrations 0023 and 0025), each by one column, and whose retention drops
 * them: `events` for events and their messages (`EVENT_RETENTION_DAYS`), `attempts` (`ATTEMPT_RETENTION_DAYS`),
 * `audit` (`AUDIT_RETENTION_DAYS`), and `idempotency`: stored `Idempotency-Key` answers, by day, each kept for
 * the key's 24 hours (not a setting: it is the API's promise).
 */
export const PARTITIONED_TABLES = {
  events: { column: 'created_at', unit: 'week', retention: 'events' },
  webhook_messages: { column: 'event_at', unit: 'week', retention: 'events' },
  webhook_attempts: { column: 'attempted_at', unit: 'week', retention: 'attempts' },
  audit_log: { column: 'at', unit: 'month', retention: 'audit' },
  idempotency_keys: { column: 'started_at', unit: 'day', retention: 'idempotency' },
} as const satisfies Record<string, { column: string; unit: PartitionUnit; retention: string }>;

export type PartitionedTable = keyof typeof PARTITIONED_TABLES;
export type RetentionKind = (typeof PARTITIONED_TABLES)[PartitionedTable]['retention'];
/** How long each kind of row is kept, in ms. */
export type RetentionPolicy = Record<RetentionKind, number>;

/** The settings' defaults: events and messages 90 days, attempts 30, the audit log 365; keys their 24 h. */
export const DEFAULT_RETENTION: RetentionPolicy = {
  events: 90 * 86_400_000,
  attempts: 30 * 86_400_000,
  audit: 365 * 86_400_000,
  idempotency: IDEMPOTENCY_TTL_MS,
};

/**
 * Periods made ahead of the current one: a day, a week or a month of rows never waits for the worker. With the
 * current one, 3 periods are always ready.
 */
export const PERIODS_AHEAD = 2;

const DAY_MS = 86_400_000;

/** The start of the period `at` falls in (UTC). */
export function periodStart(at: Date, unit: PartitionUnit): Date {
  if (unit === 'month') return new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 1));
  const day = Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate());
  if (unit === 'day') return new Date(day);
  // getUTCDay: 0 is Sunday; weeks start on Monday, as PostgreSQL's date_trunc('week').
  return new Date(day - ((at.getUTCDay() + 6) % 7) * DAY_MS);
}

/** The start of the period `n` periods after the one starting at `start`. */
export function addPeriods(start: Date, unit: PartitionUnit, n: number): Date {
  if (unit === 'month') return new Date(Date.UTC(start.getUTCFullYear(), start.getUTCMonth() + n, 1));
  return new Date(start.getTime() + n * (unit === 'day' ? 1 : 7) * DAY_MS);
}

/**
 * `events_20261130` (a week, by its Monday), `idempotency_keys_20261126` (a day) or `audit_log_202612` (a
 * month): the migrations' names too.
 */
export function partitionName(table: PartitionedTable, start: Date, unit: PartitionUnit): string {
  const iso = start.toISOString();
  const stamp = unit === 'month' ? iso.slice(0, 7).replace('-', '') : iso.slice(0, 10).replaceAll('-', '');
  return `${table}_${stamp}`;
}

/** One partition as PostgreSQL holds it. `from` null: from the beginning (the legacy partition). */
export type Partition = {
  table: PartitionedTable;
  name: string;
  from: Date | null;
  to: Date;
  /** PostgreSQL's estimate (`reltuples`), -1 before the table was ever analysed. */
  rows: number;
  /** Rows, TOAST and indexes. */
  bytes: number;
};

/** A partition to make: the period from `from` to `to`. */
export type NewPartition = { table: PartitionedTable; name: string; from: Date; to: Date };

/**
 * Rows of `table` older than `before` that its default partition may hold: their periods are past retention
 * and never get a partition (the worker was away longer than the retention).
 */
export type ExpiredDefaultRows = { table: PartitionedTable; before: Date };

/**
 * What maintenance does at `now`: makes the periods from the current one to `PERIODS_AHEAD` after it that no
 * partition covers yet (from the end of the newest one, but never one already past retention), and drops every
 * partition whose end is `retention` or more before `now` (all of it is past retention). When periods past
 * retention are skipped (the worker was away longer than that), the rows the default partition took for them
 * are expired too. Pure: `maintainPartitions` carries it out.
 */
export function partitionPlan(
  partitions: readonly Partition[],
  now: Date,
  policy: RetentionPolicy,
): { make: NewPartition[]; drop: Partition[]; expire: ExpiredDefaultRows[] } {
  const make: NewPartition[] = [];
  const drop: Partition[] = [];
  const expire: ExpiredDefaultRows[] = [];
  for (const [table, t] of Object.entries(PARTITIONED_TABLES) as [
    PartitionedTable,
    (typeof PARTITIONED_TABLES)[PartitionedTable],
  ][]) {
    const own = partitions.filter((p) => p.table === table);
    const horizon = addPeriods(periodStart(now, t.unit), t.unit, PERIODS_AHEAD + 1);
    const covered = Math.max(0, ...own.map((p) => p.to.getTime()));
    const cutoff = now.getTime() - policy[t.retention];
    // The first period not wholly past retention: one before it would be dropped as soon as made.
    const kept = periodStart(new Date(cutoff), t.unit);
    let start = covered > 0 ? new Date(covered) : periodStart(now, t.unit);
    if (start < kept) {
      expire.push({ table, before: kept });
      start = kept;
    }
    while (start < horizon) {
      const to = addPeriods(start, t.unit, 1);
      make.push({ table, name: partitionName(table, start, t.unit), from: start, to });
      start = to;
    }
    for (const p of own) if (p.to.getTime() <= cutoff) drop.push(p);
  }
  return { make, drop, expire };
}

/** When a partition goes: once all of it is past retention (its end plus the retention). */
export function dropsAt(p: Pick<Partition, 'table' | 'to'>, policy: RetentionPolicy): Date {
  return new Date(p.to.getTime() + policy[PARTITIONED_TABLES[p.table].retention]);
}

const BOUND = /FROM \((MINVALUE|'[^']+')\) TO \('([^']+)'\)/;

type PartitionRow = { parent: string; name: string; bound: string; rows: number; bytes: string };

/** Every partition of the partitioned tables, with its bounds and size: one statement, `$1` the tables. */
const PARTITIONS_QUERY = `
  select p.relname as parent, c.relname as name, pg_get_expr(c.relpartbound, c.oid) as bound,
    c.reltuples::float8 as rows, pg_total_relation_size(c.oid)::text as bytes
  from pg_inherits i
  join pg_class c on c.oid = i.inhrelid
  join pg_class p on p.oid = i.inhparent
  join pg_namespace n on n.oid = p.relnamespace
  where n.nspname = current_schema() and p.relname = any($1::text[])`;

function toPartitions(rows: readonly PartitionRow[]): Partition[] {
  const out: Partition[] = [];
  for (const r of rows) {
    const m = BOUND.exec(r.bound);
    if (!m) continue;
    out.push({
      table: r.parent as PartitionedTable,
      name: r.name,
      from: m[1] === 'MINVALUE' ? null : new Date(m[1]!.slice(1, -1)),
      to: new Date(m[2]!),
      rows: Number(r.rows),
      bytes: Number(r.bytes),
    });
  }
  return out.sort((a, b) => a.table.localeCompare(b.table) || a.to.getTime() - b.to.getTime());
}

/** Every partition of the partitioned tables, oldest first per table, with its size. */
export async function readPartitions(db: Tx): Promise<Partition[]> {
  const query = sql.raw(PARTITIONS_QUERY.replace('$1::text[]', `array[${TABLE_NAMES}]::text[]`));
  return toPartitions(await db.execute<PartitionRow>(query));
}

/** The partitioned tables' names, as an SQL array's elements (names of ours, never a caller's). */
const TABLE_NAMES = Object.keys(PARTITIONED_TABLES)
  .map((t) => `'${t}'`)
  .join(', ');

export type MaintenanceOptions = {
  /**
   * Longest a change waits for a lock, in ms: a partition dropped never queues behind a long query for longer
   * while the queries after it queue behind it. One that times out is tried again on the next run.
   * @defaultValue 500
   */
  lockTimeoutMs?: number;
};

/** What one maintenance run did, and what it could not do (retried on the next). */
export type MaintenanceResult = {
  made: string[];
  dropped: string[];
  /** Rows deleted from default partitions: their periods were past retention before a partition was made. */
  expired: { table: PartitionedTable; rows: number }[];
  failed: { name: string; code: string }[];
};

/** The advisory lock that keeps maintenance to one process at a time, whatever the number of workers. */
const MAINTENANCE_LOCK = 7_307_102_348_001;

/** A partitioned table's default partition: where a row goes that no partition of its time exists for yet. */
export const defaultPartition = (table: PartitionedTable) => `${table}_default`;

/**
 * Makes the partitions `partitionPlan` asks for and drops the expired ones, on a connection of its own, while
 * holding an advisory lock (another worker running it at the same time skips its turn: answers null).
 *
 * Each change is one short transaction whose locks wait at most `lockTimeoutMs` (a change that fails is
 * reported and tried again on the next run). A new partition is made as a table of its own, given the rows of
 * its period that the default partition took meanwhile (none, unless the worker was away for weeks), and
 * attached: `ATTACH` locks the parent only with SHARE UPDATE EXCLUSIVE, which reads and writes do not wait for.
 * An expired one is detached and dropped: that takes the parent's ACCESS EXCLUSIVE lock for a moment (a
 * partitioned table with a default partition cannot be detached `CONCURRENTLY`), and waiting for it holds the
 * queries that come after, so it waits no longer than `lockTimeoutMs`.
 */
export async function maintainPartitions(
  sql: postgres.Sql,
  now: Date,
  policy: RetentionPolicy,
  opts: MaintenanceOptions = {},
): Promise<MaintenanceResult | null> {
  const conn = await sql.reserve();
  try {
    const [lock] = await conn<{ ok: boolean }[]>`select pg_try_advisory_lock(${MAINTENANCE_LOCK}) as ok`;
    if (!lock?.ok) return null;
    try {
      const lockTimeout = Math.max(1, Math.floor(opts.lockTimeoutMs ?? 500));
      const plan = partitionPlan(
        toPartitions(await conn.unsafe<PartitionRow[]>(PARTITIONS_QUERY, [Object.keys(PARTITIONED_TABLES)])),
        now,
        policy,
      );
      const result: MaintenanceResult = { made: [], dropped: [], expired: [], failed: [] };
      const change = async (name: string, statements: string[], done: (count: number) => void) => {
        try {
          await conn.unsafe('begin');
          await conn.unsafe(`set local lock_timeout = ${lockTimeout}`);
          await conn.unsafe('set local statement_timeout = 60000');
          let count = 0;
          for (const statement of statements) count = (await conn.unsafe(statement)).count;
          await conn.unsafe('commit');
          done(count);
        } catch (err) {
          await conn.unsafe('rollback').catch(() => {});
          result.failed.push({ name, code: (err as { code?: string }).code ?? 'UNKNOWN' });
        }
      };
      for (const e of plan.expire) {
        // Normally none: the default partition holds rows only while the worker is away.
        const { column } = PARTITIONED_TABLES[e.table];
        await change(
          defaultPartition(e.table),
          [
            `delete from ${ident(defaultPartition(e.table))} where ${ident(column)} < '${e.before.toISOString()}'`,
          ],
          (rows) => {
            if (rows > 0) result.expired.push({ table: e.table, rows });
          },
        );
      }
      for (const p of plan.make) {
        const { column } = PARTITIONED_TABLES[p.table];
        const [from, to] = [`'${p.from.toISOString()}'`, `'${p.to.toISOString()}'`];
        await change(
          p.name,
          [
            `create table ${ident(p.name)} (like ${ident(p.table)} including defaults including constraints)`,
            `with moved as (delete from ${ident(defaultPartition(p.table))}
               where ${ident(column)} >= ${from} and ${ident(column)} < ${to} returning *)
             insert into ${ident(p.name)} select * from moved`,
            `alter table ${ident(p.table)} attach partition ${ident(p.name)} for values from (${from}) to (${to})`,
          ],
          () => result.made.push(p.name),
        );
      }
      for (const p of plan.drop) {
        await change(
          p.name,
          [`alter table ${ident(p.table)} detach partition ${ident(p.name)}`, `drop table ${ident(p.name)}`],
          () => result.dropped.push(p.name),
        );
      }
      return result;
    } finally {
      await conn`select pg_advisory_unlock(${MAINTENANCE_LOCK})`;
    }
  } finally {
    conn.release();
  }
}

/** A name of ours (`partitionName`, a table of `PARTITIONED_TABLES`), quoted as an identifier. */
const ident = (name: string) => `"${name.replaceAll('"', '""')}"`;
