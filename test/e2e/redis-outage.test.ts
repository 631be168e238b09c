import { loyaltyActions } from '@stampcard/db';
import { eq } from 'drizzle-orm';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { client, eventually, expectErrorShape, inProcess } from '../support/client';
import { makeWorld, uniqueEmail } from '../support/factories';
import { capturedLogger } from '../support/logs';
import { type OwnRedis, ownRedis } from '../support/own-redis';
import { createTestStack, type TestStack } from '../support/stack';
import { useTestDb } from '../support/use';

/**
 * A Redis of this test's own, on another port, stopped and started again while the API runs: actions are
 * still accepted (PostgreSQL is the record), limits fail open with one warning, `/ready` says so, and limits
 * come back by themselves.
 */
const db = useTestDb();

let redis: OwnRedis | undefined;
let stack: TestStack | undefined;
afterAll(async () => {
  await stack?.close();
  await redis?.stop();
});

const hasRateHeaders = (h: Headers) => h.get('stampcard-ratelimit-second-limit') !== null;

describe('Redis down', () => {
  it('warns at start when Redis may evict keys', async () => {
    const own = await ownRedis();
    try {
      const admin = new Redis(own.url);
      await admin.config('SET', 'maxmemory-policy', 'allkeys-lru');
      admin.disconnect();
      const { logger, lines } = capturedLogger('warn');
      const s = await createTestStack(db, { redisUrl: own.url, logger, worker: false });
      await s.close();
      expect(
        lines.some((l) => l.includes('maxmemory-policy is not noeviction') && l.includes('allkeys-lru')),
      ).toBe(true);
    } finally {
      await own.stop();
    }
  });

  it('says so at start when Redis refuses CONFIG GET (some managed services do)', async () => {
    const own = await ownRedis(['--rename-command', 'CONFIG', '']);
    try {
      const { logger, lines } = capturedLogger('warn');
      const s = await createTestStack(db, { redisUrl: own.url, logger, worker: false });
      await s.close();
      expect(lines.some((l) => l.includes('maxmemory-policy could not be read'))).toBe(true);
    } finally {
      await own.stop();
    }
  });

  it('a Redis that stops answering holds a request no longer than RATE_LIMIT_TIMEOUT_MS: it goes through unlimited', async () => {
    const own = await ownRedis();
    const s = await createTestStack(db, { redisUrl: own.url, worker: false, rateLimitTimeoutMs: 100 });
    try {
      // Room for every request this test sends, and the seed's 3 in flight.
      const w = await makeWorld(s.ctx, {
        account: { rateLimits: { second: 10_000, minute: 10_000, hour: 10_000, concurrency: 3 } },
      });
      const api = client(inProcess(s.app), w.key);
      expect(hasRateHeaders((await api.get('/v1/campaigns')).headers)).toBe(true);
      // Every client of this Redis waits for 1.5 s: it is up, but answers nothing.
      const admin = new Redis(own.url);
      await admin.call('CLIENT', 'PAUSE', '1500', 'ALL');
      admin.disconnect();
      const started = Date.now();
      const paused = await api.get('/v1/campaigns');
      const tookMs = Date.now() - started;
      expect(paused.status).toBe(200);
      expect(hasRateHeaders(paused.headers)).toBe(false);
      // Answered while Redis was still paused: the limiter gave up on it.
      expect(tookMs).toBeLessThan(1500);
      // More requests while it is paused: their scripts run once it answers again, and must leave no slot taken.
      for (let i = 0; i < 5; i++) expect((await api.get('/v1/campaigns')).status).toBe(200);
      const after = await eventually(
        () => api.get('/v1/campaigns'),
        (r) => hasRateHeaders(r.headers),
        10_000,
      );
      expect(after.status).toBe(200);
    } finally {
      await s.close();
      await own.stop();
    }
  });

  it('accepts actions with limits open, warns once, reports it on /ready, and limits resume when it is back', async () => {
    redis = await ownRedis();
    const { logger, lines } = capturedLogger('info');
    stack = await createTestStack(db, { redisUrl: redis.url, logger, worker: false });
    const w = await makeWorld(stack.ctx, { account: { rateLimits: null } });
    const api = client(inProcess(stack.app), w.key);
    const trigger = () =>
      api.post(`/v1/campaign/${w.campaign.id}/loyalty-action`, {
        participantEmail: uniqueEmail(),
        rewardId: w.reward.id,
      });

    const before = await api.get('/v1/campaigns');
    expect(before.status).toBe(200);
    expect(hasRateHeaders(before.headers)).toBe(true);

    await redis.stop();
    const replies = [await trigger(), await trigger(), await api.get('/v1/campaigns')];
    expect(replies.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(replies.some((r) => hasRateHeaders(r.headers))).toBe(false);
    const queued = await stack.ctx.db
      .select()
      .from(loyaltyActions)
      .where(eq(loyaltyActions.campaignId, w.campaign.id));
    expect(queued.map((a) => a.status)).toEqual(['QUEUED', 'QUEUED']);
    expect(lines.filter((l) => l.includes('rate limits fail open'))).toHaveLength(1);

    const ready = await client(inProcess(stack.app)).get('/ready');
    const body = expectErrorShape(ready, 503, 'UNAVAILABLE');
    expect(body.checks).toEqual({ postgres: 'ok', redis: 'down' });
    expect(body.degraded).toMatchObject({ accepting: true, limits: 'fail-open' });
    expect(typeof body.degraded.redisFailingSince).toBe('number');
    // /readyz: the API still serves (it accepts actions), degraded; a load balancer keeps it.
    const servable = await client(inProcess(stack.app)).get('/readyz');
    expect(servable.status).toBe(200);
    expect(servable.body).toEqual({ status: 'degraded', checks: { postgres: 'ok', redis: 'down' } });

    await redis.start();
    const after = await eventually(
      () => api.get('/v1/campaigns'),
      (r) => hasRateHeaders(r.headers),
      15_000,
    );
    expect(after.status).toBe(200);
    // A new Redis holds no earlier counts: this key's window starts again.
    expect(Number(after.headers.get('stampcard-ratelimit-second-remaining'))).toBeGreaterThan(20);
    expect(lines.some((l) => l.includes('rate limits resumed'))).toBe(true);
    // The queues' connection reconnects on its own schedule (backing off up to 2 s): ready once it has.
    const ready2 = await eventually(
      () => client(inProcess(stack!.app)).get('/ready'),
      (r) => r.status === 200,
      15_000,
    );
    expect(ready2.body.checks).toEqual({ postgres: 'ok', redis: 'ok' });
  });
});
