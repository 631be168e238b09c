import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { recordEvents, sentEventData } from '@stampcard/core';
import { createDb, events } from '@stampcard/db';
import { asc, eq, isNull, sql } from 'drizzle-orm';
import postgres from 'postgres';
import { describe, expect, it } from 'vitest';
import { client, eventually, expectErrorShape, inProcess } from '../../../test/support/client';
import { createTestDb } from '../../../test/support/db';
import { makeUserWithKey, makeWorld } from '../../../test/support/factories';
import { startReceiver } from '../../../test/support/receiver';
import { refusals } from '../../../test/support/refused';
import { useTestStack } from '../../../test/support/use';
import { goalWorld, registerEndpoint } from '../../../test/support/webhooks';

// The dispatcher and its sweep run, so events reach webhook endpoints as in production; served over HTTP too,
// for the curl example of docs/api.md.
const stack = useTestStack({ dispatcher: true, sweep: true, http: true });
const refused = refusals(stack);

/**
 * A refused request writes nothing. The sweep marks events dispatched in the background, so the outbox is
 * let settle first: only then does the database stay still around the request.
 */
async function expectRefused(...args: Parameters<typeof refused>) {
  await eventually(
    () => stack.ctx.db.$count(events, isNull(events.dispatchedAt)),
    (n) => n === 0,
  );
  return refused(...args);
}

type FeedEvent = { id: string; type: string; timestamp: number; data: Record<string, unknown> };

/** The campaign's outbox rows, oldest first, in the feed's shape. */
/** The campaign's feed comes to show exactly the events `ids`, in order. */
async function expectFeedShows(api: ReturnType<typeof client>, campaignId: string, ids: string[]) {
  const page = await eventually(
    async () => (await api.get(`/v1/campaign/${campaignId}/events`)).body,
    (p) => p.events.length === ids.length,
  );
  expect(page.events.map((e: any) => e.id)).toEqual(ids);
}

async function stored(campaignId: string): Promise<FeedEvent[]> {
  const rows = await stack.ctx.db
    .select()
    .from(events)
    .where(eq(events.campaignId, campaignId))
    .orderBy(asc(events.seq));
  // As stored, and as sent: a participant's per-reward maps under both spellings again (`sentEventData`).
  return rows.map((e) => ({
    id: e.id,
    type: e.type,
    timestamp: e.createdAt.getTime(),
    data: sentEventData(e.data),
  }));
}

/**
 * Waits until the feed may show every event written so far: it shows an event once every transaction older
 * than it has ended, anywhere in the cluster (other test files' included).
 */
async function visible() {
  await eventually(
    () =>
      stack.ctx.db.execute<{ n: number }>(
        sql`select count(*)::int as n from events where tx_id >= pg_snapshot_xmin(pg_current_snapshot())`,
      ),
    (rows) => rows[0]!.n === 0,
  );
}

/** `n` CAMPAIGN_ENDED events written straight to the outbox; answers their ids, oldest first. */
async function ended(campaignId: string, n: number) {
  const ids = await recordEvents(
    stack.ctx,
    Array.from({ length: n }, (_, i) => ({
      campaignId,
      type: 'CAMPAIGN_ENDED' as const,
      data: { campaign: { id: campaignId, name: `x${i}`, status: 'COMPLETE' as const, currencyISO: 'USD' } },
    })),
  );
  await visible();
  return ids;
}

describe('the event feed', () => {
  it('gives each event exactly as stored and as its webhook carried it, oldest first', async () => {
    const rx = await startReceiver();
    try {
      const w = await goalWorld(stack);
      await registerEndpoint(stack, w.campaign.id, { url: rx.url });
      await w.act();
      await w.act();
      const delivered = await rx.waitFor(6);
      await visible();
      const feed = await w.api.get(`/v1/campaign/${w.campaign.id}/events?limit=100`);
      expect(feed.status).toBe(200);
      expect(Object.keys(feed.body).sort()).toEqual(['events', 'more', 'nextAfter']);
      expect(feed.body.more).toBe(false);
      expect(feed.body.events.map((e: FeedEvent) => e.type)).toEqual([
        'NEW_PARTICIPANT_ADDED',
        'LOYALTY_ACTION_APPLIED',
        'PARTICIPANT_REACHED_A_GOAL',
        'NEW_PARTICIPANT_ADDED',
        'LOYALTY_ACTION_APPLIED',
        'PARTICIPANT_REACHED_A_GOAL',
      ]);
      expect(feed.body.nextAfter).toBe(feed.body.events[5].id);
      // Each event is its outbox row: id, type, createdAt in UTC ms, data; in seq order.
      expect(feed.body.events).toEqual(await stored(w.campaign.id));
      for (const e of feed.body.events) {
        expect(Object.keys(e).sort()).toEqual(['data', 'id', 'timestamp', 'type']);
        expect(e.id).toMatch(/^evt_/);
        expect(Number.isInteger(e.timestamp)).toBe(true);
      }
      // Without its id, each event is byte for byte the body one webhook delivery carried.
      const bodies = feed.body.events.map(({ id: _id, ...body }: FeedEvent) => JSON.stringify(body));
      expect([...new Set(delivered.map((r) => r.body))].sort()).toEqual([...bodies].sort());
    } finally {
      await rx.close();
    }
  });

  it("pages through every event exactly once with the default limit, and never shows another campaign's", async () => {
    const w = await makeWorld(stack.ctx);
    const other = await makeWorld(stack.ctx);
    const first = await ended(w.campaign.id, 30);
    await ended(other.campaign.id, 5);
    const mine = [...first, ...(await ended(w.campaign.id, 15))];
    const api = client(inProcess(stack.app), w.key);
    const path = `/v1/campaign/${w.campaign.id}/events`;
    const pages: { ids: string[]; more: boolean; nextAfter: string | null }[] = [];
    let after: string | null = null;
    do {
      const res = await api.get(after ? `${path}?after=${after}` : path);
      expect(res.status).toBe(200);
      const ids = res.body.events.map((e: FeedEvent) => e.id);
      pages.push({ ids, more: res.body.more, nextAfter: res.body.nextAfter });
      expect(res.body.nextAfter).toBe(ids.at(-1));
      after = res.body.more ? res.body.nextAfter : null;
    } while (after && pages.length < 10);
    expect(pages.map((p) => p.ids.length)).toEqual([20, 20, 5]);
    expect(pages.map((p) => p.more)).toEqual([true, true, false]);
    expect(pages.flatMap((p) => p.ids)).toEqual(mine);

    // After the last event: an empty page, nothing more, no cursor.
    const last = await api.get(`${path}?after=${mine.at(-1)}`);
    expect(last.body).toEqual({ events: [], more: false, nextAfter: null });
    // `more` is exact when the page ends on the last event.
    const exact = await api.get(`${path}?after=${mine[29]}&limit=15`);
    expect(exact.body.events.map((e: FeedEvent) => e.id)).toEqual(mine.slice(30));
    expect(exact.body).toMatchObject({ more: false, nextAfter: mine.at(-1) });
    // Limits at both bounds.
    const one = await api.get(`${path}?limit=1`);
    expect(one.body.events.map((e: FeedEvent) => e.id)).toEqual([mine[0]]);
    expect(one.body).toMatchObject({ more: true, nextAfter: mine[0] });
    const hundred = await api.get(`${path}?limit=100`);
    expect(hundred.body.events.map((e: FeedEvent) => e.id)).toEqual(mine);
    expect(hundred.body.more).toBe(false);
    // The other campaign sees only its own.
    const theirs = await client(inProcess(stack.app), other.key).get(
      `/v1/campaign/${other.campaign.id}/events`,
    );
    expect(theirs.body.events).toHaveLength(5);
    expect(theirs.body.events.every((e: FeedEvent) => !mine.includes(e.id))).toBe(true);
  });

  it('answers an empty page for a campaign without events', async () => {
    const w = await makeWorld(stack.ctx);
    const res = await client(inProcess(stack.app), w.key).get(`/v1/campaign/${w.campaign.id}/events`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ events: [], more: false, nextAfter: null });
  });

  it('refuses bad paging with the ValidationError body', async () => {
    const w = await makeWorld(stack.ctx);
    const api = client(inProcess(stack.app), w.key);
    const path = `/v1/campaign/${w.campaign.id}/events`;
    for (const [q, param] of [
      ['limit=0', 'limit'],
      ['limit=101', 'limit'],
      ['limit=abc', 'limit'],
      ['limit=1.5', 'limit'],
      ['limit=', 'limit'],
      ['after=', 'after'],
      ['colour=red', 'colour'],
    ] as const) {
      const body = await expectRefused(() => api.get(`${path}?${q}`), 400, 'VALIDATION_ERROR');
      expect(body.name).toBe('ValidationError');
      expect(body.errors).toEqual([expect.objectContaining({ location: 'query', param })]);
    }
  });

  it('refuses unknown cursors and callers who cannot reach the campaign', async () => {
    const w = await makeWorld(stack.ctx);
    const other = await makeWorld(stack.ctx);
    const api = client(inProcess(stack.app), w.key);
    const path = `/v1/campaign/${w.campaign.id}/events`;
    const [foreign] = await ended(other.campaign.id, 1);
    // An event of another campaign is no cursor here, nor is an id that never existed.
    for (const after of [foreign, 'evt_missing']) {
      const body = await expectRefused(() => api.get(`${path}?after=${after}`), 404, 'NOT_FOUND');
      expect(body.name).toBe('NotFound');
      expect(body.message).toContain(after);
    }
    await expectRefused(() => api.get('/v1/campaign/nosuchcampaign/events'), 404, 'NOT_FOUND');
    // Another account's campaign, even with a cursor of its own.
    const b = await expectRefused(
      () => api.get(`/v1/campaign/${other.campaign.id}/events?after=${foreign}`),
      403,
      'NOT_AUTHORIZED',
    );
    expect(b.message).toMatch(/another account/);
    // A MEMBER key without access to the campaign, and no key at all.
    const member = await makeUserWithKey(stack.ctx, w.account.id, { role: 'MEMBER', campaignIds: [] });
    await expectRefused(() => client(inProcess(stack.app), member.key).get(path), 403, 'NOT_AUTHORIZED');
    expectErrorShape(await client(inProcess(stack.app)).get(path), 403, 'NOT_AUTHORIZED');
  });

  it('answers the curl example of docs/api.md as it shows', async () => {
    const readme = readFileSync(new URL('../../../docs/api.md', import.meta.url), 'utf8');
    const section = readme.slice(readme.indexOf('### Reconciling with the event feed'));
    const curl = section.match(/```sh\n(curl [^\n]*)\n/)![1]!;
    const w = await makeWorld(stack.ctx);
    const ids = await ended(w.campaign.id, 102);
    const { stdout, stderr } = await promisify(execFile)('bash', ['-c', `set -euo pipefail\n${curl}`], {
      env: {
        ...process.env,
        B: stack.baseUrl!,
        CAMPAIGN_ID: w.campaign.id,
        API_KEY: w.key,
        LAST_EVENT_ID: ids[0]!,
      },
    });
    expect(stderr).toBe('');
    const body = JSON.parse(stdout);
    expect(body.events.map((e: FeedEvent) => e.id)).toEqual(ids.slice(1, 101));
    expect(body).toMatchObject({ more: true, nextAfter: ids[100] });
  });
});

describe('the event feed under concurrent writers', () => {
  it('never lets a reader pass an event that commits after a later one', async () => {
    const w = await makeWorld(stack.ctx);
    const api = client(inProcess(stack.app), w.key);
    const feed = async (after?: string) =>
      (await api.get(`/v1/campaign/${w.campaign.id}/events?limit=100${after ? `&after=${after}` : ''}`)).body;
    const pg = postgres(stack.dbUrl, { max: 2, onnotice: () => {} });
    const a = await pg.reserve();
    const b = await pg.reserve();
    const insert = (conn: typeof a, id: string) =>
      conn`insert into events (id, campaign_id, type, data, created_at)
           values (${id}, ${w.campaign.id}, 'CAMPAIGN_ENDED', ${pg.json({ campaign: { id: w.campaign.id } })}, now())`;
    try {
      // B's transaction starts writing first; A then takes the smaller seq, and B commits first.
      await b`begin`;
      await b`select pg_current_xact_id()`;
      await a`begin`;
      await insert(a, 'evt_first_seq');
      await insert(b, 'evt_second_seq');
      await b`commit`;
      // Shown once every older transaction in the cluster has ended (other test files' too); A is younger.
      const seen = await eventually(feed, (page) => page.events.length > 0);
      expect(seen.events.map((e: any) => e.id)).toEqual(['evt_second_seq']);
      await a`commit`;
      // Ordered by seq alone, a reader past evt_second_seq would never see evt_first_seq.
      const next = await eventually(
        () => feed(seen.nextAfter),
        (page) => page.events.length > 0,
      );
      expect(next.events.map((e: any) => e.id)).toEqual(['evt_first_seq']);
    } finally {
      a.release();
      b.release();
      await pg.end();
    }
  });
});

describe('the event feed and long transactions', () => {
  const campaignEvents = (campaignId: string, n: number) =>
    recordEvents(
      stack.ctx,
      Array.from({ length: n }, (_, i) => ({
        campaignId,
        type: 'CAMPAIGN_ENDED' as const,
        data: {
          campaign: { id: campaignId, name: `x${i}`, status: 'COMPLETE' as const, currencyISO: 'USD' },
        },
      })),
    );

  /** A connection to `url` inside a transaction that has written (it has an id), held open until released. */
  async function heldWriter(url: string, opts: { readOnly?: boolean } = {}) {
    const pg = postgres(url, { max: 1, onnotice: () => {} });
    const conn = await pg.reserve();
    if (opts.readOnly) {
      await conn`begin isolation level repeatable read read only`;
      await conn`select count(*) from pg_class`;
    } else {
      await conn`begin`;
      await conn`select pg_current_xact_id()`;
    }
    return {
      end: async () => {
        await conn`rollback`;
        conn.release();
        await pg.end();
      },
    };
  }

  it("a transaction left open in another database of the cluster does not hold this database's feed", async () => {
    const w = await makeWorld(stack.ctx);
    const api = client(inProcess(stack.app), w.key);
    const other = await createTestDb();
    const held = await heldWriter(other.url);
    try {
      const ids = await campaignEvents(w.campaign.id, 2);
      // Before, the feed stopped at the oldest transaction of the whole cluster: this one, until it ended.
      await expectFeedShows(api, w.campaign.id, ids);
    } finally {
      await held.end();
      await other.drop();
    }
  });

  it('a transaction that wrote in this database holds the feed before what began after it, until it ends', async () => {
    const w = await makeWorld(stack.ctx);
    const api = client(inProcess(stack.app), w.key);
    const before = await campaignEvents(w.campaign.id, 1);
    await eventually(
      async () => (await api.get(`/v1/campaign/${w.campaign.id}/events`)).body,
      (p) => p.events.length === 1,
    );
    const held = await heldWriter(stack.dbUrl);
    let ended = false;
    try {
      const after = await campaignEvents(w.campaign.id, 2);
      expect(await stack.ctx.db.$count(events, eq(events.campaignId, w.campaign.id))).toBe(3);
      // Committed, yet not shown: the held transaction began before them and might still write an event
      // that sorts before them.
      const page = (await api.get(`/v1/campaign/${w.campaign.id}/events`)).body;
      expect(page.events.map((e: any) => e.id)).toEqual(before);
      await held.end();
      ended = true;
      const all = await eventually(
        async () => (await api.get(`/v1/campaign/${w.campaign.id}/events`)).body,
        (p) => p.events.length === 3,
      );
      expect(all.events.map((e: any) => e.id)).toEqual([...before, ...after]);
    } finally {
      if (!ended) await held.end();
    }
  });

  it("one of the service's own sessions left idle in a transaction holds it only until PostgreSQL ends that session", async () => {
    const w = await makeWorld(stack.ctx);
    const api = client(inProcess(stack.app), w.key);
    // The service's pools end a session idle in a transaction after 10 s; 300 ms here, the same setting.
    const pool = createDb(stack.dbUrl, { max: 1, idleInTransactionTimeoutMs: 300 });
    const conn = await pool.sql.reserve();
    try {
      const [row] = await conn<{ pid: number }[]>`select pg_backend_pid() as pid`;
      const pid = row!.pid;
      await conn`begin`;
      await conn`select pg_current_xact_id()`;
      const ids = await campaignEvents(w.campaign.id, 2);
      await expectFeedShows(api, w.campaign.id, ids);
      // It was ended by the server, not by the test.
      const [gone] = await stack.ctx.db.execute<{ n: number }>(
        sql`select count(*)::int as n from pg_stat_activity where pid = ${pid}`,
      );
      expect(gone!.n).toBe(0);
    } finally {
      await pool.close();
    }
  });

  it("a read-only transaction (a backup's, a report's) never holds it, however long it runs", async () => {
    const w = await makeWorld(stack.ctx);
    const api = client(inProcess(stack.app), w.key);
    const held = await heldWriter(stack.dbUrl, { readOnly: true });
    try {
      const ids = await campaignEvents(w.campaign.id, 2);
      await expectFeedShows(api, w.campaign.id, ids);
    } finally {
      await held.end();
    }
  });
});
