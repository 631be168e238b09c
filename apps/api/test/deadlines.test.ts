import { createApp } from '@stampcard/api';
import { createLogger } from '@stampcard/config';
import { campaigns, createDb, type DbHandle, loyaltyActions, webhookMessages } from '@stampcard/db';
import { createQueues, createRedis, redisReady } from '@stampcard/jobs';
import { eq, sql } from 'drizzle-orm';
import type { MiddlewareHandler } from 'hono';
import { afterEach, describe, expect, it } from 'vitest';
import { client, expectErrorShape, inProcess } from '../../../test/support/client';
import { makeWorld, uniqueEmail } from '../../../test/support/factories';
import { type FreezableProxy, freezableProxy } from '../../../test/support/freezable-proxy';
import { capturedLogger } from '../../../test/support/logs';
import { fingerprint } from '../../../test/support/refused';
import { OPERATOR_TOKEN } from '../../../test/support/stack';
import { useTestStack } from '../../../test/support/use';
import { registerEndpoint } from '../../../test/support/webhooks';
import type { AppEnv } from '../src/env';
import { DEADLINE_TICK_MS, deadlineClock } from '../src/middleware/deadline';

/**
 * Every wait is bounded. A slow statement is cancelled by PostgreSQL; a database that stops answering on
 * open connections (a frozen proxy in front of the real server) gives a fast 503, and the writes the
 * abandoned request had not made yet are never made.
 */
const stack = useTestStack({ worker: false });
const logger = createLogger({ level: 'silent', name: 'deadlines-test' });

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const f of cleanups.splice(0).reverse()) await f();
});

async function databaseName(): Promise<string> {
  const [row] = await stack.ctx.db.execute<{ db: string }>(sql`select current_database() as db`);
  return row!.db;
}

/** A direct pool to this file's database with a short statement timeout. */
async function poolWithStatementTimeout(ms: number): Promise<DbHandle> {
  const db = createDb(`postgres://postgres@127.0.0.1:5432/${await databaseName()}`, {
    statementTimeoutMs: ms,
  });
  cleanups.push(() => db.close());
  return db;
}

/** A pool to this file's database through a proxy that can be frozen. */
async function frozenablePool(max: number): Promise<{ proxy: FreezableProxy; db: DbHandle }> {
  const proxy = await freezableProxy(5432);
  const db = createDb(`postgres://postgres@127.0.0.1:${proxy.port}/${await databaseName()}`, { max });
  cleanups.push(async () => {
    proxy.thaw();
    await db.close();
    await proxy.close();
  });
  return { proxy, db };
}

/** A limiter that records how each request's handler ended, even one whose caller was already answered. */
function settledRecorder() {
  const settled: string[] = [];
  const limiter: MiddlewareHandler<AppEnv> = async (_c, next) => {
    await next();
    settled.push('handled');
  };
  return { settled, limiter };
}

async function until(check: () => boolean | Promise<boolean>, timeoutMs = 10_000) {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('statement and lock timeouts', () => {
  it('a statement slower than the statement timeout is cancelled by PostgreSQL: 503 UNAVAILABLE', async () => {
    const db = await poolWithStatementTimeout(150);
    const app = createApp({
      ...stack.deps,
      db: db.db,
      logger,
      extraMiddleware: [
        async (c, next) => {
          await c.get('ctx').db.execute(sql`select pg_sleep(2)`);
          await next();
        },
      ],
    });
    const w = await makeWorld(stack.ctx);
    const r = await client(inProcess(app), w.key).get('/v1/campaigns');
    expectErrorShape(r, 503, 'UNAVAILABLE');
  });

  it('a write that waits on a locked row gives up at the lock timeout, and changes nothing', async () => {
    const w = await makeWorld(stack.ctx);
    const db = await poolWithStatementTimeout(200);
    const app = createApp({ ...stack.deps, db: db.db, logger });
    let release!: () => void;
    const held = new Promise<void>((r) => {
      release = r;
    });
    let locked!: () => void;
    const isLocked = new Promise<void>((r) => {
      locked = r;
    });
    // Another session holds the campaign row for longer than the lock timeout.
    const holder = stack.ctx.db.transaction(async (tx) => {
      await tx.select().from(campaigns).where(eq(campaigns.id, w.campaign.id)).for('update');
      locked();
      await held;
    });
    await isLocked;
    const before = await fingerprint(stack.ctx.db);
    const r = await client(inProcess(app), OPERATOR_TOKEN).patch(`/admin/v1/campaigns/${w.campaign.id}`, {
      name: 'Renamed',
    });
    release();
    await holder;
    expectErrorShape(r, 503, 'UNAVAILABLE');
    expect(await fingerprint(stack.ctx.db)).toEqual(before);
  });
});

describe('a database that stops answering on open connections', () => {
  it('answers 503 at the request deadline, and the abandoned request writes nothing once it answers again', async () => {
    // One connection, already open: every statement of the three requests waits on it, none opens another.
    const { proxy, db } = await frozenablePool(1);
    const { settled, limiter } = settledRecorder();
    const app = createApp({
      ...stack.deps,
      db: db.db,
      logger,
      requestTimeoutMs: 300,
      maxWaitMs: 200,
      extraMiddleware: [limiter],
    });
    const w = await makeWorld(stack.ctx);
    const api = client(inProcess(app), w.key);
    // Connections are open and warm.
    expect((await api.get('/v1/campaigns')).status).toBe(200);
    settled.length = 0;
    const before = await fingerprint(stack.ctx.db);

    proxy.freeze();
    const path = `/v1/campaign/${w.campaign.id}/loyalty-action`;
    const replies = await Promise.all([
      api.post(path, { participantEmail: uniqueEmail(), rewardId: w.reward.id }),
      api.post(`${path}?wait=true`, { participantEmail: uniqueEmail(), rewardId: w.reward.id }),
      api.get(`/v1/campaign/${w.campaign.id}`),
    ]);
    for (const r of replies) {
      const body = expectErrorShape(r, 503, 'UNAVAILABLE');
      expect(body.message).toMatch(/within \d+ ms/);
    }

    // The database answers again: the abandoned handlers run on, and stop before writing.
    proxy.thaw();
    await until(() => settled.length === 3);
    expect(await fingerprint(stack.ctx.db)).toEqual(before);
    // And the same pool serves again.
    expect((await api.get('/v1/campaigns')).status).toBe(200);
  });

  it('with every pooled connection stuck, further requests still get a fast 503 (the deadline bounds the pool wait)', async () => {
    const { proxy, db } = await frozenablePool(1);
    const app = createApp({ ...stack.deps, db: db.db, logger, requestTimeoutMs: 300 });
    const w = await makeWorld(stack.ctx);
    const api = client(inProcess(app), w.key);
    expect((await api.get('/v1/campaigns')).status).toBe(200);
    proxy.freeze();
    const replies = await Promise.all(Array.from({ length: 5 }, () => api.get('/v1/campaigns')));
    for (const r of replies) expectErrorShape(r, 503, 'UNAVAILABLE');
  });
});

describe('the shared deadline clock', () => {
  it('expires each request at its own deadline, a held-back one later, and watches none once all are answered', async () => {
    const { proxy, db } = await frozenablePool(2);
    // One request held back on purpose gets 400 ms more (as the write slowdown gives), the others none.
    const holdBack: MiddlewareHandler<AppEnv> = async (c, next) => {
      if (c.req.header('x-hold') === '1') c.get('extendDeadline')?.(400);
      await next();
    };
    const app = createApp({
      ...stack.deps,
      db: db.db,
      logger,
      requestTimeoutMs: 300,
      extraMiddleware: [holdBack],
    });
    const w = await makeWorld(stack.ctx);
    const api = client(inProcess(app), w.key);
    expect((await api.get('/v1/campaigns')).status).toBe(200);
    expect(deadlineClock().watching).toBe(0);
    proxy.freeze();
    const started = performance.now();
    const timed = async (headers: Record<string, string>) => {
      const r = await api.get('/v1/campaigns', headers);
      return { r, ms: performance.now() - started };
    };
    const [held, ...plain] = await Promise.all([
      timed({ 'x-hold': '1' }),
      ...Array.from({ length: 4 }, () => timed({})),
    ]);
    for (const { r, ms } of [held!, ...plain]) {
      expectErrorShape(r, 503, 'UNAVAILABLE');
      expect(ms).toBeGreaterThanOrEqual(300 - 1);
    }
    expect(held!.r.body.message).toContain('700 ms');
    expect(held!.ms).toBeGreaterThanOrEqual(700 - 1);
    expect(Math.max(...plain.map((p) => p.ms))).toBeLessThan(held!.ms);
    expect(deadlineClock().watching).toBe(0);
    // The clock stops on its first tick with nothing to watch.
    await new Promise((r) => setTimeout(r, DEADLINE_TICK_MS * 3));
    expect(deadlineClock()).toEqual({ watching: 0, running: false });
  });
});

/** Redis for an app through a proxy that can be frozen; its commands give up after `commandTimeout` ms. */
async function frozenableRedis(commandTimeout: number) {
  const proxy = await freezableProxy(6379);
  const redis = createRedis(`redis://127.0.0.1:${proxy.port}`, {
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    commandTimeout,
  });
  redis.on('error', () => {});
  await redisReady(redis);
  const queues = createQueues(redis, stack.prefix, () => {});
  cleanups.push(async () => {
    proxy.thaw();
    await queues.close().catch(() => {});
    redis.disconnect();
    await proxy.close();
  });
  return { proxy, redis, queues };
}

describe('a Redis that stops answering after the action was recorded', () => {
  it('the caller is told the action was accepted (it was), not that nothing was', async () => {
    const { proxy, redis, queues } = await frozenableRedis(2000);
    const app = createApp({ ...stack.deps, redis, queues, logger, requestTimeoutMs: 300 });
    const w = await makeWorld(stack.ctx);
    proxy.freeze();
    const started = performance.now();
    const r = await client(inProcess(app), w.key).post(`/v1/campaign/${w.campaign.id}/loyalty-action`, {
      participantEmail: uniqueEmail(),
      rewardId: w.reward.id,
    });
    expect(r.status).toBe(200);
    expect(r.body.message).toMatch(/accepted/);
    // Answered at its deadline: the enqueue it handed the action to (stuck until Redis's 2 s command timeout)
    // is not waited for past it.
    expect(performance.now() - started).toBeLessThan(1500);
    const [row] = await stack.ctx.db
      .select()
      .from(loyaltyActions)
      .where(eq(loyaltyActions.id, r.body.action.id));
    expect(row?.status).toBe('QUEUED');
  });

  it('a write that committed while its answer waits on Redis past the deadline: 503 with outcome LANDED naming the write, which is there', async () => {
    // Redis stays silent longer than the deadline and the wait for a committed write's answer together.
    const { proxy, redis, queues } = await frozenableRedis(10_000);
    const statementTimeoutMs = 200;
    const logs = capturedLogger('info');
    const app = createApp({
      ...stack.deps,
      redis,
      queues,
      logger: logs.logger,
      requestTimeoutMs: 300,
      statementTimeoutMs,
    });
    const w = await makeWorld(stack.ctx);
    const endpoint = await registerEndpoint(stack, w.campaign.id, {
      url: 'https://hooks.example.com/landed',
    });
    proxy.freeze();
    const started = performance.now();
    // The test message is committed, then its delivery is queued in Redis, which does not answer.
    const r = await client(inProcess(app), OPERATOR_TOKEN).post(
      `/admin/v1/webhook-endpoints/${endpoint.id}/test`,
    );
    const elapsed = performance.now() - started;
    const body = expectErrorShape(r, 503, 'UNAVAILABLE');
    expect(body.outcome).toBe('LANDED');
    expect(body.message).toMatch(/recorded/);
    expect(body.message).not.toMatch(/nothing was/);
    expect(body.messageId).toMatch(/^msg_/);
    // Answered once the deadline and the wait for the committed write's own answer passed, not at Redis's pace.
    expect(elapsed).toBeGreaterThanOrEqual(300);
    expect(elapsed).toBeLessThan(3000);
    const [row] = await stack.ctx.db
      .select()
      .from(webhookMessages)
      .where(eq(webhookMessages.id, body.messageId));
    expect(row?.endpointId).toBe(endpoint.id);
    // Redis answers again: the route ends, and its end is logged as that of a request told the truth.
    proxy.thaw();
    const requestId = r.headers.get('x-request-id');
    const about = (msg: string) =>
      logs.lines.map((l) => JSON.parse(l)).filter((l) => l.msg === msg && l.requestId === requestId);
    await until(() => about('abandoned request ended after its answer').length === 1);
    expect(
      about('a write committed after its request was answered with a 503 that said its outcome was unknown'),
    ).toEqual([]);
  });
});
