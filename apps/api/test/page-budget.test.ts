import { MAX_FORM_FIELDS, MAX_FORM_VALUE_LENGTH, PAGE_BUDGET_BYTES } from '@stampcard/core';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, eventually, overHttp, type Reply } from '../../../test/support/client';
import { createTestDb, type TestDb } from '../../../test/support/db';
import { makeWorld, uniqueEmail } from '../../../test/support/factories';
import { type FreezableProxy, freezableProxy } from '../../../test/support/freezable-proxy';
import { useReceivers } from '../../../test/support/receiver';
import { createTestStack, OPERATOR_TOKEN, type TestStack } from '../../../test/support/stack';
import { registerEndpoint } from '../../../test/support/webhooks';

// Over real HTTP: the sizes measured are the bytes a caller receives. The API's pool reaches PostgreSQL through
// a TCP proxy that counts the bytes PostgreSQL sends: what a page loads into the API process.
let db: TestDb | undefined;
let proxy: FreezableProxy | undefined;
let stack: TestStack;
beforeAll(async () => {
  db = await createTestDb();
  const url = new URL(db.url);
  proxy = await freezableProxy(Number(url.port || 5432), url.hostname);
  url.port = String(proxy.port);
  // What this file measures is bytes, not time: sizing 100 events of 1.5 MB each converts 150 MB of jsonb to
  // text in PostgreSQL (1.6 s alone, past the 3 s default now and then on a CI machine running two files on two cores).
  stack = await createTestStack(
    { ...db, url: url.toString() },
    {
      http: true,
      statementTimeoutMs: 15_000,
      requestTimeoutMs: 20_000,
    },
  );
});
afterAll(async () => {
  await stack?.close();
  await proxy?.close();
  await db?.drop();
});
const receiver = useReceivers();

/**
 * The bytes PostgreSQL sent the API while `request` ran, and what it answered. A 503 (a statement past its
 * timeout: a page of 150 MB of rows, read on a busy 2-core machine, now and then) is asked again, up to three
 * times, each attempt measured on its own.
 */
async function loaded<T extends { status: number }>(
  request: () => Promise<T>,
): Promise<{ reply: T; bytes: number }> {
  for (let attempt = 1; ; attempt++) {
    const before = proxy!.fromServer();
    const reply = await request();
    if (reply.status !== 503 || attempt === 3) return { reply, bytes: proxy!.fromServer() - before };
  }
}

/** Room for what a request reads besides its page's items: its API key, campaign, cursor, and row framing. */
const READ_MARGIN = 64 * 1024;

/** JSON writes a control character as six bytes (`\u0001`): the widest a string of n characters gets. */
const wide = (n: number) => '\u0001'.repeat(n);

/** A form's answers: every field there may be, each `chars` wide characters (5,000 at the limit). */
function answers(chars: number): Record<string, string> {
  const a: Record<string, string> = {};
  for (let i = 0; i < MAX_FORM_FIELDS; i++) a[`field${String(i).padStart(2, '0')}`] = wide(chars);
  return a;
}
const AT_LIMIT = answers(MAX_FORM_VALUE_LENGTH);

type Walk = { ids: string[]; pages: number; firstPage: Reply & { bytes: number } };

/**
 * Asks for the largest page (`limit=100`) and follows the list's cursor to the end. Every page must be within
 * the budget, or carry a single item (an item larger than the budget alone, of at most `itemAtMost` bytes).
 */
async function walk(
  api: ReturnType<typeof client>,
  first: string,
  key: string,
  next: (body: any) => string | null,
  itemAtMost: number,
): Promise<Walk> {
  const ids: string[] = [];
  let url: string | null = first;
  let pages = 0;
  let firstPage: Walk['firstPage'] | undefined;
  while (url !== null) {
    const reply = await api.get(url);
    expect(reply.status, JSON.stringify(reply.body).slice(0, 300)).toBe(200);
    const bytes = Buffer.byteLength(JSON.stringify(reply.body));
    const items = reply.body[key] as { id: string }[];
    expect(items.length).toBeGreaterThan(0);
    expect(items.length).toBeLessThanOrEqual(100);
    if (items.length > 1) expect(bytes).toBeLessThanOrEqual(PAGE_BUDGET_BYTES);
    else expect(bytes).toBeLessThanOrEqual(Math.max(PAGE_BUDGET_BYTES, itemAtMost + 200));
    firstPage ??= { ...reply, bytes };
    ids.push(...items.map((i) => i.id));
    pages += 1;
    expect(pages, 'paging ends').toBeLessThan(200);
    url = reply.body.more ? next(reply.body) : null;
  }
  return { ids, pages, firstPage: firstPage! };
}

/** Each id once, in the list's order. */
function expectEveryOnce(seen: string[], expected: string[]) {
  expect(new Set(seen).size).toBe(seen.length);
  expect(seen).toEqual(expected);
}

describe('a list page stays within the byte budget whatever its items hold', () => {
  it('form submissions: 50 answers of 5,000 characters each, and smaller ones, walked exactly once', async () => {
    const w = await makeWorld(stack.ctx);
    const api = client(overHttp(stack.baseUrl!), w.key);
    const added = await api.post(`/v1/campaign/${w.campaign.id}/participant`, { email: uniqueEmail('form') });
    expect(added.status).toBe(200);
    // 8 submissions at every limit (1.5 MB of JSON each) among 40 of 60 KB: 14 MB in one page of 100 before.
    const n = 48;
    const ids: string[] = [];
    for (let g = 0; g < n; g++) {
      const id = `fsub_budget${String(g).padStart(4, '0')}`;
      ids.push(id);
      await stack.ctx.db.execute(sql`
        insert into form_submissions (id, campaign_id, participant_id, reward_id, status, form_data, created_at)
        values (${id}, ${w.campaign.id}, ${added.body.id}, ${w.reward.id}, 'REVIEWED',
          ${JSON.stringify(g % 6 === 0 ? AT_LIMIT : answers(200))}::jsonb,
          now() - interval '1 hour' + ${g} * interval '1 millisecond')`);
    }
    const base = `/v1/campaign/${w.campaign.id}/form-submissions?limit=100`;
    const one = Buffer.byteLength(JSON.stringify(AT_LIMIT));
    const {
      ids: seen,
      pages,
      firstPage,
    } = await walk(api, base, 'formSubmissions', (b) => `${base}&nextId=${b.nextId}`, one + 1024);
    expect(firstPage.body.formSubmissions.length).toBeLessThan(100);
    expect(firstPage.body.limit).toBe(100);
    expect(firstPage.body.more).toBe(true);
    expectEveryOnce(seen, ids);
    expect(pages).toBeGreaterThan(8);
  });

  it('the events feed: form answers at their limits in event data, walked exactly once', async () => {
    const w = await makeWorld(stack.ctx);
    const api = client(overHttp(stack.baseUrl!), w.key);
    // 5 events at every limit (1.5 MB) among 25 of 300 KB: 15 MB in one page of 100 before.
    const ids: string[] = [];
    for (let g = 0; g < 30; g++) {
      const id = `evt_budget${w.campaign.id.slice(-8)}${String(g).padStart(4, '0')}`;
      ids.push(id);
      const data = { formSubmission: { formData: g % 6 === 0 ? AT_LIMIT : answers(1000) } };
      // Already dispatched: the feed is what is asked here, not delivery.
      await stack.ctx.db.execute(sql`
        insert into events (id, campaign_id, type, data, created_at, dispatched_at)
        values (${id}, ${w.campaign.id}, 'PARTICIPANT_SUBMITTED_REWARD_FORM', ${JSON.stringify(data)}::jsonb, now(), now())`);
    }
    // The feed shows an event once every older transaction in the cluster has ended.
    await eventually(
      () =>
        stack.ctx.db.execute<{ n: number }>(
          sql`select count(*)::int as n from events where tx_id >= pg_snapshot_xmin(pg_current_snapshot())`,
        ),
      (rows) => rows[0]!.n === 0,
    );
    const base = `/v1/campaign/${w.campaign.id}/events?limit=100`;
    const { ids: seen, firstPage } = await walk(
      api,
      base,
      'events',
      (b) => `${base}&after=${b.nextAfter}`,
      Buffer.byteLength(JSON.stringify(AT_LIMIT)) + 1024,
    );
    expect(firstPage.body.events.length).toBeLessThan(100);
    expect(firstPage.body.more).toBe(true);
    expectEveryOnce(seen, ids);
  });

  it("webhook messages: attempt logs of 4 KiB answers, walked exactly once through the operator's list", async () => {
    const w = await makeWorld(stack.ctx);
    const rx = await receiver();
    const endpoint = await registerEndpoint(stack, w.campaign.id, { url: rx.url });
    const op = client(overHttp(stack.baseUrl!), OPERATOR_TOKEN);
    // 30 failed messages of 6 attempts, each with the first 4 KiB of an answer at its widest: about 150 KB a
    // message, 4.4 MB in one page before. Listed newest first.
    const ids: string[] = [];
    for (let g = 0; g < 30; g++) {
      const id = `msg_budget${endpoint.id.slice(-8)}${String(g).padStart(4, '0')}`;
      ids.unshift(id);
      await stack.ctx.db.execute(sql`
        insert into webhook_messages (id, endpoint_id, campaign_id, event_type, status, attempts, next_attempt_at,
          last_status_code, last_error, created_at, updated_at)
        values (${id}, ${endpoint.id}, ${w.campaign.id}, 'CAMPAIGN_ENDED', 'FAILED', 6, now(), 500, 'HTTP 500',
          now() - interval '1 hour' + ${g} * interval '1 millisecond', now())`);
      await stack.ctx.db.execute(sql`
        insert into webhook_attempts (id, message_id, endpoint_id, attempted_at, status_code, latency_ms,
          response_excerpt, error_class, succeeded)
        select ${id} || '_a' || a, ${id}, ${endpoint.id}, now() - interval '1 hour' + a * interval '1 second', 500, 10,
          ${wide(4096)}, 'HTTP_STATUS', false
        from generate_series(1, 6) as a`);
    }
    const base = `/admin/v1/webhook-endpoints/${endpoint.id}/messages?limit=100`;
    const {
      ids: seen,
      pages,
      firstPage,
    } = await walk(op, base, 'messages', (b) => `${base}&after=${b.nextAfter}`, PAGE_BUDGET_BYTES);
    expect(firstPage.body.messages.length).toBeLessThan(30);
    expect(firstPage.body.more).toBe(true);
    expect(firstPage.body.messages[0].attemptLog.length).toBeGreaterThan(0);
    expectEveryOnce(seen, ids);
    expect(pages).toBeGreaterThan(1);
  });
});

/** The feed shows an event once every older transaction in the cluster has ended. */
const feedCaughtUp = () =>
  eventually(
    () =>
      stack.ctx.db.execute<{ n: number }>(
        sql`select count(*)::int as n from events where tx_id >= pg_snapshot_xmin(pg_current_snapshot())`,
      ),
    (rows) => rows[0]!.n === 0,
  );

describe('a page loads from PostgreSQL at most its budget and one item, whatever a list holds', () => {
  it('the events feed: 100 events at their limits, a page of 100 loads one of them, not 100 (150 MB)', async () => {
    const w = await makeWorld(stack.ctx);
    const api = client(overHttp(stack.baseUrl!), w.key);
    const data = { formSubmission: { formData: AT_LIMIT } };
    const one = Buffer.byteLength(JSON.stringify(data));
    await stack.ctx.db.execute(sql`
      insert into events (id, campaign_id, type, data, created_at, dispatched_at)
      select 'evt_read' || ${w.campaign.id.slice(-8)} || lpad(g::text, 4, '0'), ${w.campaign.id},
        'PARTICIPANT_SUBMITTED_REWARD_FORM', ${JSON.stringify(data)}::jsonb, now(), now()
      from generate_series(1, 100) as g`);
    await feedCaughtUp();
    const { reply, bytes } = await loaded(() => api.get(`/v1/campaign/${w.campaign.id}/events?limit=100`));
    expect(reply.status).toBe(200);
    expect(reply.body.events).toHaveLength(1);
    expect(reply.body.more).toBe(true);
    expect(bytes).toBeGreaterThan(one);
    expect(bytes).toBeLessThan(PAGE_BUDGET_BYTES + one + READ_MARGIN);
  });

  it('form submissions: 100 at their limits, a page of 100 loads one of them, not 100 (150 MB)', async () => {
    const w = await makeWorld(stack.ctx);
    const api = client(overHttp(stack.baseUrl!), w.key);
    const added = await api.post(`/v1/campaign/${w.campaign.id}/participant`, { email: uniqueEmail('read') });
    expect(added.status).toBe(200);
    const one = Buffer.byteLength(JSON.stringify(AT_LIMIT));
    await stack.ctx.db.execute(sql`
      insert into form_submissions (id, campaign_id, participant_id, reward_id, status, form_data, created_at)
      select 'fsub_read' || ${w.campaign.id.slice(-8)} || lpad(g::text, 4, '0'), ${w.campaign.id}, ${added.body.id},
        ${w.reward.id}, 'REVIEWED', ${JSON.stringify(AT_LIMIT)}::jsonb,
        now() - interval '1 hour' + g * interval '1 millisecond'
      from generate_series(1, 100) as g`);
    const { reply, bytes } = await loaded(() =>
      api.get(`/v1/campaign/${w.campaign.id}/form-submissions?limit=100`),
    );
    expect(reply.status).toBe(200);
    expect(reply.body.formSubmissions).toHaveLength(1);
    expect(reply.body.more).toBe(true);
    expect(bytes).toBeGreaterThan(one);
    expect(bytes).toBeLessThan(PAGE_BUDGET_BYTES + one + READ_MARGIN);
  });

  it('webhook messages: 100 with full attempt logs of 4 KiB answers, a page of 100 loads about 1 MiB of them, not 8 MB', async () => {
    const w = await makeWorld(stack.ctx);
    const rx = await receiver();
    const endpoint = await registerEndpoint(stack, w.campaign.id, { url: rx.url });
    const op = client(overHttp(stack.baseUrl!), OPERATOR_TOKEN);
    // Each log at its bound: its first and last 10 attempts, each with 4,096 characters of answer.
    const prefix = `msg_read${endpoint.id.slice(-8)}`;
    await stack.ctx.db.execute(sql`
      insert into webhook_messages (id, endpoint_id, campaign_id, event_type, status, attempts, next_attempt_at,
        last_status_code, last_error, created_at, updated_at)
      select ${prefix} || lpad(g::text, 4, '0'), ${endpoint.id}, ${w.campaign.id}, 'CAMPAIGN_ENDED', 'FAILED', 20,
        now(), 500, 'HTTP 500', now() - interval '1 hour' + g * interval '1 millisecond', now()
      from generate_series(1, 100) as g`);
    await stack.ctx.db.execute(sql`
      insert into webhook_attempts (id, message_id, endpoint_id, attempted_at, status_code, latency_ms,
        response_excerpt, error_class, succeeded)
      select m.id || '_a' || a, m.id, ${endpoint.id}, now() - interval '1 hour' + a * interval '1 second', 500, 10,
        ${wide(4096)}, 'HTTP_STATUS', false
      from webhook_messages m, generate_series(1, 20) as a where m.endpoint_id = ${endpoint.id}`);
    const one = 20 * (4096 + 200) + 1024;
    const { reply, bytes } = await loaded(() =>
      op.get(`/admin/v1/webhook-endpoints/${endpoint.id}/messages?limit=100`),
    );
    expect(reply.status).toBe(200);
    expect(reply.body.messages.length).toBeGreaterThan(0);
    expect(reply.body.more).toBe(true);
    expect(bytes).toBeLessThan(PAGE_BUDGET_BYTES + one + READ_MARGIN);
    // A page loads more messages than it carries (their answers are six times larger in JSON than stored):
    // the next page starts with the first one left out, and the walk still sees each message once.
    const base = `/admin/v1/webhook-endpoints/${endpoint.id}/messages?limit=100`;
    const { ids: seen } = await walk(
      op,
      base,
      'messages',
      (b) => `${base}&after=${b.nextAfter}`,
      PAGE_BUDGET_BYTES,
    );
    const newestFirst = Array.from({ length: 100 }, (_, i) => `${prefix}${String(100 - i).padStart(4, '0')}`);
    expectEveryOnce(seen, newestFirst);
  });
});
