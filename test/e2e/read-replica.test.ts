import { createDb, createReplica, type DbHandle, runMigrations } from '@stampcard/db';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { client, operatorProgram, overHttp } from '../support/client';
import { scrapeMetrics } from '../support/metrics';
import { type OwnPostgres, type OwnStandby, startOwnPostgres } from '../support/own-postgres';
import { createTestStack, OPERATOR_TOKEN, type TestStack } from '../support/stack';

/**
 * `DATABASE_READ_URL` on a real streaming standby: a PostgreSQL of the test's own and a `pg_basebackup -R` copy of
 * it. The standby's replay is paused to make its lag visible: what the lists show then proves where they read.
 */
const METRICS_TOKEN = 'metrics_replica_token_0123456789';
let primary: OwnPostgres;
let standby: OwnStandby;
let db: DbHandle & { url: string };
let stack: TestStack;
let replay: postgres.Sql;

beforeAll(async () => {
  primary = await startOwnPostgres();
  const url = primary.url('stampcard');
  await runMigrations(url);
  standby = await primary.standby();
  db = { ...createDb(url, { max: 2 }), url };
  replay = postgres(standby.url('postgres'), { max: 1, onnotice: () => {} });
  stack = await createTestStack(
    { ...db, drop: async () => {} },
    { http: true, readUrl: standby.url('stampcard'), readMaxLagMs: 60_000, metricsToken: METRICS_TOKEN },
  );
}, 90_000);

afterAll(async () => {
  await stack?.close();
  await replay?.end();
  await db?.close();
  primary?.destroy();
}, 60_000);

/** Retries `check` until it passes (10 s unless told). */
const eventually = (check: () => Promise<unknown> | unknown, timeout = 10_000) =>
  vi.waitFor(check, { timeout, interval: 100 });

const base = () => stack.baseUrl ?? '';
const pause = () => replay`select pg_wal_replay_pause()`;
const resume = () => replay`select pg_wal_replay_resume()`;

async function program() {
  const http = overHttp(base());
  const { key, campaignId } = await operatorProgram(client(http, OPERATOR_TOKEN));
  const api = client(http, key);
  // The campaign reached the standby: its lists answer from there.
  await eventually(async () => {
    expect((await api.get(`/v1/campaign/${campaignId}/participants`)).status).toBe(200);
  });
  return { api, campaignId };
}

const emails = (page: { participants: { email: string }[] }) => page.participants.map((p) => p.email);

describe('a read replica (DATABASE_READ_URL)', () => {
  it('serves the participants list, the leaderboard and the feed; the primary serves writes and what the replica has not replayed', async () => {
    const { api, campaignId } = await program();
    expect(
      (await api.post(`/v1/campaign/${campaignId}/participant`, { email: 'early@example.com' })).status,
    ).toBe(200);
    await eventually(async () => {
      expect(emails((await api.get(`/v1/campaign/${campaignId}/participants`)).body)).toEqual([
        'early@example.com',
      ]);
    });

    await pause();
    try {
      // Writes go to the primary while the standby replays nothing.
      const added = await api.post(`/v1/campaign/${campaignId}/participant`, { email: 'late@example.com' });
      expect(added.status).toBe(200);
      expect((await api.get(`/v1/campaign/${campaignId}/participant/${added.body.id}`)).status).toBe(200);
      // The lists read the standby, which has not seen it yet (its lag is within the bound of 60 s).
      expect(emails((await api.get(`/v1/campaign/${campaignId}/participants`)).body)).toEqual([
        'early@example.com',
      ]);
      const board = await api.get(`/v1/campaign/${campaignId}/leaderboard`);
      expect(emails(board.body)).toEqual(['early@example.com']);
      const feed = await api.get(`/v1/campaign/${campaignId}/events`);
      expect(feed.body.events.map((e: { type: string }) => e.type)).toEqual(['NEW_PARTICIPANT_ADDED']);

      // A position the standby has not replayed (the new participant's event, as its webhook would carry it) is
      // read from the primary: lag never turns a cursor the caller holds into a 404.
      const [newest] = await db.sql<{ id: string }[]>`
        select id from events where campaign_id = ${campaignId} order by created_at desc limit 1`;
      const after = await api.get(`/v1/campaign/${campaignId}/events?after=${newest!.id}`);
      expect(after.status).toBe(200);
      expect(after.body.events).toEqual([]);
      const unknown = await api.get(`/v1/campaign/${campaignId}/events?after=evt_unknown`);
      expect(unknown.status).toBe(404);
    } finally {
      await resume();
    }
    await eventually(async () => {
      expect(emails((await api.get(`/v1/campaign/${campaignId}/participants`)).body).sort()).toEqual([
        'early@example.com',
        'late@example.com',
      ]);
    });
  });

  it('goes out of use past its lag bound and back once caught up', async () => {
    const replica = createReplica(standby.url('stampcard'), { maxLagMs: 300, checkEveryMs: 100 });
    try {
      await eventually(async () => {
        expect(replica.current()).toBeDefined();
        expect(replica.lagMs()).toBe(0);
      });
      await pause();
      try {
        // One transaction on the primary that the standby receives and does not replay: its lag grows from then.
        await db.sql`create table if not exists replica_ticks (n int)`;
        await db.sql`insert into replica_ticks values (1)`;
        await eventually(async () => expect(replica.current()).toBeUndefined());
        expect(replica.current()).toBeUndefined();
        expect(replica.lagMs()).toBeGreaterThan(300);
      } finally {
        await resume();
      }
      await eventually(async () => {
        expect(replica.current()).toBeDefined();
        expect(replica.lagMs()).toBe(0);
      });
    } finally {
      await replica.close();
    }
  });

  it('stopped, leaves its reads to the primary at once, and is used again once back', async () => {
    const { api, campaignId } = await program();
    const metrics = () => scrapeMetrics(`${base()}/metrics`, METRICS_TOKEN);
    expect((await metrics()).value('stampcard_db_replica_in_use')).toBe(1);
    standby.stop();
    try {
      // The first read after the stop may still pick the standby: its failed connection is read from the primary.
      for (let i = 0; i < 5; i++) {
        const list = await api.get(`/v1/campaign/${campaignId}/participants`);
        expect(list.status).toBe(200);
      }
      await eventually(async () => {
        const scrape = await metrics();
        expect(scrape.value('stampcard_db_replica_in_use')).toBe(0);
        expect(scrape.value('stampcard_db_replica_lag_seconds')).toBeNaN();
      });
    } finally {
      standby.start();
    }
    await eventually(
      async () => expect((await metrics()).value('stampcard_db_replica_in_use')).toBe(1),
      20_000,
    );
  });
});
