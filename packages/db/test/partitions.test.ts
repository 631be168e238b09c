import { systemClock } from '@stampcard/core';
import {
  addPeriods,
  maintainPartitions,
  type Partition,
  partitionName,
  partitionPlan,
  periodStart,
  type RetentionPolicy,
  readPartitions,
} from '@stampcard/db';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDb, type TestDb } from '../../../test/support/db';
import { makeWorld } from '../../../test/support/factories';

const DAY = 86_400_000;
const POLICY: RetentionPolicy = { events: 90 * DAY, attempts: 30 * DAY, audit: 365 * DAY, idempotency: DAY };
const at = (iso: string) => new Date(iso);

describe('partition periods', () => {
  it('a week starts on Monday 00:00 UTC, a month on its first day, whatever the hour or the year', () => {
    expect(periodStart(at('2026-11-26T08:00:00Z'), 'week')).toEqual(at('2026-11-23T00:00:00Z'));
    expect(periodStart(at('2026-11-23T00:00:00Z'), 'week')).toEqual(at('2026-11-23T00:00:00Z'));
    expect(periodStart(at('2026-11-29T23:59:59.999Z'), 'week')).toEqual(at('2026-11-23T00:00:00Z'));
    expect(periodStart(at('2027-01-01T12:00:00Z'), 'week')).toEqual(at('2026-12-28T00:00:00Z'));
    expect(periodStart(at('2026-12-31T23:59:59Z'), 'month')).toEqual(at('2026-12-01T00:00:00Z'));
    expect(addPeriods(at('2026-12-01T00:00:00Z'), 'month', 2)).toEqual(at('2027-02-01T00:00:00Z'));
    expect(addPeriods(at('2026-12-28T00:00:00Z'), 'week', 1)).toEqual(at('2027-01-04T00:00:00Z'));
    expect(partitionName('events', at('2027-01-04T00:00:00Z'), 'week')).toBe('events_20270104');
    expect(partitionName('audit_log', at('2027-02-01T00:00:00Z'), 'month')).toBe('audit_log_202702');
    expect(periodStart(at('2026-11-26T23:59:59.999Z'), 'day')).toEqual(at('2026-11-26T00:00:00Z'));
    expect(addPeriods(at('2026-12-31T00:00:00Z'), 'day', 1)).toEqual(at('2027-01-01T00:00:00Z'));
    expect(partitionName('idempotency_keys', at('2027-01-01T00:00:00Z'), 'day')).toBe(
      'idempotency_keys_20270101',
    );
  });

  it('plans the periods no partition covers up to two ahead, and drops only what is past retention whole', () => {
    const now = at('2026-11-26T08:00:00Z');
    const week = (from: string): Partition => ({
      table: 'webhook_attempts',
      name: `webhook_attempts_${from.replaceAll('-', '')}`,
      from: at(`${from}T00:00:00Z`),
      to: new Date(at(`${from}T00:00:00Z`).getTime() + 7 * DAY),
      rows: 0,
      bytes: 0,
    });
    const legacy: Partition = { ...week('2026-10-12'), name: 'webhook_attempts_legacy', from: null };
    const plan = partitionPlan(
      [legacy, week('2026-10-19'), week('2026-10-26'), week('2026-11-23')],
      now,
      POLICY,
    );
    // Attempts are kept 30 days: the legacy partition ended 2026-10-19, more than 30 days ago; the week of
    // 2026-10-19 ended 2026-10-26, 31 days before now; the week of 2026-10-26 ends 2026-11-02, 24 days ago.
    expect(plan.drop.map((p) => p.name)).toEqual(['webhook_attempts_legacy', 'webhook_attempts_20261019']);
    expect(plan.make.filter((p) => p.table === 'webhook_attempts').map((p) => p.name)).toEqual([
      'webhook_attempts_20261130',
      'webhook_attempts_20261207',
    ]);
    // Keys last a day: their newest partition ended a week ago, so only yesterday's day on is made (today's
    // rows may start yesterday), and the rows the default partition holds from before then are expired.
    const keys: Partition = {
      ...week('2026-11-12'),
      table: 'idempotency_keys',
      name: 'idempotency_keys_20261118',
    };
    keys.from = at('2026-11-18T00:00:00Z');
    keys.to = at('2026-11-19T00:00:00Z');
    const keyPlan = partitionPlan([keys], now, POLICY);
    expect(keyPlan.make.filter((p) => p.table === 'idempotency_keys').map((p) => p.name)).toEqual([
      'idempotency_keys_20261125',
      'idempotency_keys_20261126',
      'idempotency_keys_20261127',
      'idempotency_keys_20261128',
    ]);
    expect(keyPlan.drop.map((p) => p.name)).toEqual(['idempotency_keys_20261118']);
    expect(keyPlan.expire).toContainEqual({ table: 'idempotency_keys', before: at('2026-11-25T00:00:00Z') });
    // A table with no partition at all gets the current period and two ahead.
    expect(plan.make.filter((p) => p.table === 'audit_log').map((p) => p.name)).toEqual([
      'audit_log_202611',
      'audit_log_202612',
      'audit_log_202701',
    ]);
  });
});

describe('partition maintenance on a database', () => {
  let db: TestDb;
  beforeAll(async () => {
    db = await createTestDb();
  });
  afterAll(async () => {
    await db?.drop();
  });

  const names = async (table: string) =>
    (await readPartitions(db.db)).filter((p) => p.table === table).map((p) => p.name);

  it('makes partitions ahead as time passes, rows land in them, and a week past retention is dropped whole', async () => {
    const now = new Date();
    const made = await maintainPartitions(db.sql, now, POLICY);
    expect(made).not.toBeNull();
    expect(made!.failed).toEqual([]);
    // The migration made three weeks after the legacy partition: nothing is missing yet.
    const before = await names('events');
    expect(before[0]).toBe('events_legacy');
    expect(before.length).toBeGreaterThanOrEqual(4);

    const keysBefore = await names('idempotency_keys');
    expect(keysBefore).toHaveLength(4);
    // Ten weeks on, the next weeks are made, up to two after the current one.
    const later = new Date(now.getTime() + 70 * DAY);
    const run = await maintainPartitions(db.sql, later, POLICY);
    expect(run!.failed).toEqual([]);
    // Attempts are kept 30 days: by then their legacy partition (to the end of this week) is past it, and the
    // weeks after it; nothing else is.
    expect(run!.dropped).toContain('webhook_attempts_legacy');
    expect(run!.dropped.filter((name) => !name.startsWith('idempotency_keys_'))).toEqual(
      run!.dropped.filter((name) => name.startsWith('webhook_attempts_')),
    );
    // Keys last a day: every day of them made before goes, and of the days in between only those not yet past
    // their 24 h are made (the day before `later`, its own, two ahead), not 70 to drop on the next run.
    const keyDays = (list: string[]) => list.filter((name) => name.startsWith('idempotency_keys_'));
    expect(keyDays(run!.dropped)).toEqual(keysBefore);
    expect(keyDays(run!.made)).toEqual(
      [-1, 0, 1, 2].map((n) =>
        partitionName('idempotency_keys', addPeriods(periodStart(later, 'day'), 'day', n), 'day'),
      ),
    );
    const horizon = addPeriods(periodStart(later, 'week'), 'week', 2);
    expect(await names('events')).toContain(partitionName('events', horizon, 'week'));

    // Rows in the legacy partition and in a week of their own, across the boundary between them.
    const legacyEnd = (await readPartitions(db.db)).find((p) => p.name === 'events_legacy')!.to;
    const w = await makeWorld({ db: db.db, clock: systemClock });
    const insertEvent = (id: string, when: Date) =>
      db.db.execute(sql`
        insert into events (id, campaign_id, type, data, created_at)
        values (${id}, ${w.campaign.id}, 'CAMPAIGN_ENDED', '{}'::jsonb, ${when.toISOString()}::timestamptz)`);
    await insertEvent('evt_before', new Date(legacyEnd.getTime() - 1));
    await insertEvent('evt_after', legacyEnd);
    const placed = await db.db.execute<{ id: string; partition: string }>(
      sql`select id, tableoid::regclass::text as partition from events where campaign_id = ${w.campaign.id} order by seq`,
    );
    expect(placed).toEqual([
      { id: 'evt_before', partition: 'events_legacy' },
      { id: 'evt_after', partition: partitionName('events', legacyEnd, 'week') },
    ]);

    // Past retention of the legacy partition's end, it goes (with its row); the next week's row stays.
    const dropAt = new Date(legacyEnd.getTime() + POLICY.events + 1);
    const dropped = await maintainPartitions(db.sql, dropAt, POLICY);
    expect(dropped!.dropped).toContain('events_legacy');
    expect(dropped!.dropped).toContain('webhook_messages_legacy');
    expect(dropped!.dropped).not.toContain('audit_log_legacy');
    const left = await db.db.execute<{ id: string }>(
      sql`select id from events where campaign_id = ${w.campaign.id}`,
    );
    expect(left.map((r) => r.id)).toEqual(['evt_after']);
    expect(await names('events')).not.toContain('events_legacy');
    const tables = await db.db.execute<{ n: number }>(
      sql`select count(*)::int as n from pg_class where relname = 'events_legacy'`,
    );
    expect(tables[0]!.n).toBe(0);
  });

  it('keeps a row no partition is made for yet in the default partition, and moves it when it makes that one', async () => {
    const w = await makeWorld({ db: db.db, clock: systemClock });
    const far = new Date(Date.now() + 300 * DAY);
    await db.db.execute(sql`
      insert into events (id, campaign_id, type, data, created_at)
      values ('evt_far', ${w.campaign.id}, 'CAMPAIGN_ENDED', '{}'::jsonb, ${far.toISOString()}::timestamptz)`);
    const where = () =>
      db.db.execute<{ partition: string }>(
        sql`select tableoid::regclass::text as partition from events where id = 'evt_far'`,
      );
    expect(await where()).toEqual([{ partition: 'events_default' }]);
    const run = await maintainPartitions(db.sql, far, POLICY);
    expect(run!.failed).toEqual([]);
    expect(await where()).toEqual([{ partition: partitionName('events', periodStart(far, 'week'), 'week') }]);
  });

  it('makes no partition already past retention: the rows the default partition took for those periods are deleted', async () => {
    const far = new Date(Date.now() + 500 * DAY);
    await db.db.execute(sql`
      insert into idempotency_keys (scope, key, request_hash, method, path, state, claim_token, started_at,
        locked_until, expires_at)
      values ('operator', 'stray', 'h', 'POST', '/x', 'DONE', 't', ${far.toISOString()}::timestamptz,
        ${far.toISOString()}::timestamptz, ${far.toISOString()}::timestamptz + interval '24 hours')`);
    // Three days on, the key's day is past its 24 h: no partition is made for it, and its row goes.
    const run = await maintainPartitions(db.sql, new Date(far.getTime() + 3 * DAY), POLICY);
    expect(run!.failed).toEqual([]);
    expect(run!.expired).toEqual([{ table: 'idempotency_keys', rows: 1 }]);
    expect(run!.made).not.toContain(partitionName('idempotency_keys', periodStart(far, 'day'), 'day'));
    const rows = await db.db.execute(sql`select 1 from idempotency_keys where key = 'stray'`);
    expect(rows).toHaveLength(0);
  });

  it('runs in one process at a time: a second run while the first holds the lock skips its turn', async () => {
    const holder = await db.sql.reserve();
    try {
      await holder`select pg_advisory_lock(7307102348001)`;
      expect(await maintainPartitions(db.sql, new Date(), POLICY)).toBeNull();
      await holder`select pg_advisory_unlock(7307102348001)`;
      expect(await maintainPartitions(db.sql, new Date(), POLICY)).not.toBeNull();
    } finally {
      holder.release();
    }
  });

  it('a partition whose lock is not granted in time is reported and made on the next run', async () => {
    const far = new Date(Date.now() + 700 * DAY);
    const holder = await db.sql.reserve();
    try {
      // A long transaction that holds the events table (not its partitions): making a partition like it waits,
      // past the timeout.
      await holder`begin`;
      await holder`lock table only events in access exclusive mode`;
      const run = await maintainPartitions(db.sql, far, POLICY, { lockTimeoutMs: 50 });
      expect(run!.failed.some((f) => f.name.startsWith('events_') && f.code === '55P03')).toBe(true);
      expect(run!.made.some((n) => n.startsWith('audit_log_'))).toBe(true);
    } finally {
      await holder`rollback`;
      holder.release();
    }
    const again = await maintainPartitions(db.sql, far, POLICY, { lockTimeoutMs: 50 });
    expect(again!.failed).toEqual([]);
    expect(await names('events')).toContain(partitionName('events', periodStart(far, 'week'), 'week'));
  });
});
