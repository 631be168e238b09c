import { type App, createApp } from '@stampcard/api';
import { manualClock } from '@stampcard/core';
import { createDb, loyaltyActions } from '@stampcard/db';
import { createRedis, redisReady } from '@stampcard/jobs';
import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { client, expectErrorShape, type Reply } from '../../../test/support/client';
import { makeUserWithKey, makeWorld, uniqueEmail } from '../../../test/support/factories';
import { REDIS_URL } from '../../../test/support/redis-keys';
import { refusals } from '../../../test/support/refused';
import { useTestStack } from '../../../test/support/use';

/**
 * The seed's limits on a manual clock, so that window edges are walked to the millisecond: the limiter takes
 * its time from `limitsClock` instead of Redis's. The worker does not run: accepted actions stay QUEUED.
 */
const clock = manualClock('2026-11-23T10:00:00.000Z');
const stack = useTestStack({ worker: false, limitsClock: clock });
const expectRefused = refusals(stack);

type World = Awaited<ReturnType<typeof makeWorld>>;

/** A world on the seed's default limits, or on the limits given. */
const world = (rateLimits: Record<string, number> | null = null) =>
  makeWorld(stack.ctx, { account: { rateLimits } });

/** A client of `app` whose requests come from one socket address, as a served app would see them. */
const clientFrom = (app: App, key: string, address: string) =>
  client(
    (path, init) =>
      Promise.resolve(app.request(path, init, { incoming: { socket: { remoteAddress: address } } })),
    key,
  );
const api = (key: string, address = '198.51.100.7') => clientFrom(stack.app, key, address);

const list = (w: World) => api(w.key).get('/v1/campaigns');
/** A cheap write: the campaign does not exist (404), but the request counts as a write all the same. */
const write = (w: World) => api(w.key).post('/v1/campaign/nope/participant', { email: 'a@example.com' });

async function times(n: number, send: () => Promise<Reply>): Promise<Reply[]> {
  const replies: Reply[] = [];
  for (let i = 0; i < n; i++) replies.push(await send());
  return replies;
}

const SEED_429_FIELDS = [
  'code',
  'level',
  'message',
  'name',
  'policyName',
  'status',
  'supportUrl',
  'timestamp',
];

describe('rate limits per API key (the seed: 30 per 5 s, 200 per minute, 10,000 per hour)', () => {
  it('every answer carries the three policies, remaining counts down, and the IETF draft headers', async () => {
    const w = await world();
    const first = await list(w);
    expect(first.status).toBe(200);
    const h = first.headers;
    expect(h.get('stampcard-ratelimit-second-limit')).toBe('30');
    expect(h.get('stampcard-ratelimit-second-remaining')).toBe('29');
    expect(h.get('stampcard-ratelimit-minute-limit')).toBe('200');
    expect(h.get('stampcard-ratelimit-minute-remaining')).toBe('199');
    expect(h.get('stampcard-ratelimit-hour-limit')).toBe('10000');
    expect(h.get('stampcard-ratelimit-hour-remaining')).toBe('9999');
    expect(h.get('stampcard-retry-after-second-milliseconds')).toBeNull();
    expect(h.get('ratelimit-policy')).toBe('"second";q=30;w=5, "minute";q=200;w=60, "hour";q=10000;w=3600');
    expect(h.get('ratelimit')).toBe('"second";r=29;t=5, "minute";r=199;t=60, "hour";r=9999;t=3600');
    // Errors answered after the limiter carry them too.
    const missing = await api(w.key).get('/v1/campaign/nope');
    expectErrorShape(missing, 404, 'NOT_FOUND');
    expect(missing.headers.get('stampcard-ratelimit-second-remaining')).toBe('28');
  });

  it('the 31st request in 5 s gets exactly the seed 429 body, and the window slides to the millisecond', async () => {
    const w = await world();
    clock.advance(60_000);
    const start = clock.now().getTime();
    const admitted = await times(30, () => list(w));
    expect(admitted.map((r) => r.status)).toEqual(Array(30).fill(200));
    // The 30th hits the policy: it says so, and when the oldest request leaves the window.
    expect(admitted[29]!.headers.get('stampcard-ratelimit-second-remaining')).toBe('0');
    expect(admitted[29]!.headers.get('stampcard-retry-after-second-milliseconds')).toBe('5000');

    clock.advance(4999);
    const refused = await list(w);
    const body = expectErrorShape(refused, 429, 'RATE_LIMIT');
    expect(Object.keys(body).sort()).toEqual(SEED_429_FIELDS);
    expect(body).toMatchObject({ name: 'RateLimit', policyName: 'SECOND', level: 'error', status: 429 });
    expect(body.message).toContain('30 requests per 5 seconds');
    expect(refused.headers.get('stampcard-retry-after-second-milliseconds')).toBe('1');
    expect(refused.headers.get('stampcard-ratelimit-second-remaining')).toBe('0');
    expect(refused.headers.get('stampcard-ratelimit-minute-remaining')).toBe('170');
    expect(refused.headers.get('retry-after')).toBe('1');

    // At 5,000 ms the first 30 are out of the window; the refused request was not counted.
    clock.set(start + 5000);
    const again = await list(w);
    expect(again.status).toBe(200);
    expect(again.headers.get('stampcard-ratelimit-second-remaining')).toBe('29');
    expect(again.headers.get('stampcard-ratelimit-minute-remaining')).toBe('169');
  });

  it('is a sliding window: requests spread over the window count until each is 5 s old', async () => {
    const w = await world();
    clock.advance(60_000);
    const start = clock.now().getTime();
    await times(15, () => list(w));
    clock.set(start + 3000);
    await times(15, () => list(w));
    // A fixed window starting at `start + 5000` would admit 30 here; only the first 15 have left.
    clock.set(start + 5000);
    const replies = await times(16, () => list(w));
    expect(replies.slice(0, 15).every((r) => r.status === 200)).toBe(true);
    expectErrorShape(replies[15]!, 429, 'RATE_LIMIT');
    expect(replies[15]!.headers.get('stampcard-retry-after-second-milliseconds')).toBe('3000');
  });

  it('MINUTE and HOUR policies refuse by name, and the longest wait is the one named', async () => {
    const minute = await world({ second: 1000, minute: 5 });
    clock.advance(3_600_000);
    await times(5, () => list(minute));
    const byMinute = expectErrorShape(await list(minute), 429, 'RATE_LIMIT');
    expect(byMinute.policyName).toBe('MINUTE');
    expect(byMinute.message).toContain('5 requests per minute');

    const hour = await world({ second: 1000, minute: 1000, hour: 3 });
    await times(3, () => list(hour));
    const byHour = await list(hour);
    expect(expectErrorShape(byHour, 429, 'RATE_LIMIT').policyName).toBe('HOUR');
    expect(byHour.headers.get('stampcard-retry-after-hour-milliseconds')).toBe('3600000');
    expect(byHour.headers.get('stampcard-ratelimit-hour-limit')).toBe('3');

    // Second and hour both full: the hour's wait is longer, so it is named.
    const both = await world({ second: 2, minute: 1000, hour: 2 });
    await times(2, () => list(both));
    expect(expectErrorShape(await list(both), 429, 'RATE_LIMIT').policyName).toBe('HOUR');
  });

  it('a refused request does no work: no action is recorded, nothing in the database changes', async () => {
    const w = await world({ second: 1, minute: 1000, hour: 1000 });
    clock.advance(60_000);
    const trigger = () =>
      api(w.key).post(`/v1/campaign/${w.campaign.id}/loyalty-action`, {
        participantEmail: uniqueEmail(),
        rewardId: w.reward.id,
      });
    expect((await trigger()).status).toBe(200);
    const body = await expectRefused(trigger, 429, 'RATE_LIMIT');
    expect(body.policyName).toBe('SECOND');
    const actions = await stack.ctx.db
      .select()
      .from(loyaltyActions)
      .where(eq(loyaltyActions.campaignId, w.campaign.id));
    expect(actions).toHaveLength(1);
  });

  it('limits are per API key: another key of the same account has its own windows', async () => {
    const w = await world({ second: 2, minute: 1000, hour: 1000 });
    clock.advance(60_000);
    await times(2, () => list(w));
    expectErrorShape(await list(w), 429, 'RATE_LIMIT');
    const other = await makeUserWithKey(stack.ctx, w.account.id);
    expect((await api(other.key).get('/v1/campaigns')).status).toBe(200);
  });

  it("the account's override replaces the defaults, field by field", async () => {
    const w = await world({ second: 50 });
    const r = await list(w);
    expect(r.headers.get('stampcard-ratelimit-second-limit')).toBe('50');
    expect(r.headers.get('stampcard-ratelimit-minute-limit')).toBe('200');
  });

  it('requests without a valid key carry no rate headers', async () => {
    const r = await api('sk_not_a_key').get('/v1/campaigns');
    expectErrorShape(r, 403, 'NOT_AUTHORIZED');
    expect(r.headers.get('stampcard-ratelimit-second-limit')).toBeNull();
  });
});

describe('write slowdown (past 60 writes a minute, each waits (writes over 60) × 100 ms)', () => {
  it('the 61st write waits 100 ms and the 63rd 300 ms; reads are never slowed', async () => {
    const w = await world();
    clock.advance(3_600_000);
    // 60 writes in a minute, within the 30-per-5-s policy.
    await times(30, () => write(w));
    clock.advance(5000);
    await times(30, () => write(w));
    clock.advance(5000);
    const delays: (string | null)[] = [];
    for (let i = 61; i <= 63; i++) {
      const started = performance.now();
      const r = await write(w);
      expect(r.status).toBe(404);
      delays.push(r.headers.get('stampcard-slowdown-milliseconds'));
      // The delay really happened (a lower bound, not a timing target).
      expect(performance.now() - started).toBeGreaterThanOrEqual((i - 60) * 100 - 5);
    }
    expect(delays).toEqual(['100', '200', '300']);
    const read = await list(w);
    expect(read.status).toBe(200);
    expect(read.headers.get('stampcard-slowdown-milliseconds')).toBeNull();
    // A minute after, the early writes have left the window.
    clock.advance(60_000);
    expect((await write(w)).headers.get('stampcard-slowdown-milliseconds')).toBeNull();
  });

  it("counts from the account's own threshold", async () => {
    const w = await world({ second: 1000, minute: 1000, slowdownAfter: 3 });
    clock.advance(3_600_000);
    const replies = await times(6, () => write(w));
    expect(replies.map((r) => r.headers.get('stampcard-slowdown-milliseconds'))).toEqual([
      null,
      null,
      null,
      '100',
      '200',
      '300',
    ]);
  });

  it('slowdownAfter 0 turns it off', async () => {
    const w = await world({ second: 1000, minute: 1000, slowdownAfter: 0 });
    clock.advance(3_600_000);
    const replies = await times(80, () => write(w));
    expect(replies.every((r) => r.headers.get('stampcard-slowdown-milliseconds') === null)).toBe(true);
  });
});

describe('concurrency (3 in flight per account and client IP)', () => {
  it('the 4th request in flight gets 429 CONCURRENCY; another IP, or a finished request, frees room', async () => {
    let open!: () => void;
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    const app = createApp({
      ...stack.deps,
      extraMiddleware: [
        async (c, next) => {
          if (c.req.query('hold') === 'true') await gate;
          await next();
        },
      ],
    });
    const w = await world();
    const at = (address: string) => clientFrom(app, w.key, address);
    const held = [1, 2, 3].map(() => at('203.0.113.1').get('/v1/campaigns?hold=true'));
    await new Promise((r) => setTimeout(r, 100));
    const fourth = await at('203.0.113.1').get('/v1/campaigns');
    const body = expectErrorShape(fourth, 429, 'RATE_LIMIT');
    expect(Object.keys(body).sort()).toEqual(SEED_429_FIELDS);
    expect(body.policyName).toBe('CONCURRENCY');
    expect(fourth.headers.get('stampcard-ratelimit-second-limit')).toBe('30');
    // Another address of the same account has its own three.
    expect((await at('203.0.113.2').get('/v1/campaigns')).status).toBe(200);
    open();
    expect((await Promise.all(held)).map((r) => r.status)).toEqual([200, 200, 200]);
    expect((await at('203.0.113.1').get('/v1/campaigns')).status).toBe(200);
  });

  it('a request that crashes gives its slot back', async () => {
    const app = createApp({
      ...stack.deps,
      extraMiddleware: [
        async () => {
          throw new Error('crash');
        },
      ],
    });
    const w = await world({ concurrency: 1 });
    const api1 = clientFrom(app, w.key, '203.0.113.9');
    const replies = await times(3, () => api1.get('/v1/campaigns'));
    expect(replies.map((r) => r.status)).toEqual([500, 500, 500]);
  });

  it("answers without waiting for its slot's release, and the caller's next request finds the slot free", async () => {
    const limiter = stack.deps.limits!;
    const released: string[] = [];
    // A release that Redis never answers.
    const slow = {
      ...limiter,
      release: (lease: { key: string }) => {
        released.push(lease.key);
        return new Promise<void>(() => undefined);
      },
    };
    const held = createApp({ ...stack.deps, limits: slow });
    const w = await world({ concurrency: 1 });
    const answered = clientFrom(held, w.key, '203.0.113.60').get('/v1/campaigns');
    const timedOut = new Promise<'hung'>((resolve) => setTimeout(() => resolve('hung'), 3000).unref());
    const first = await Promise.race([answered, timedOut]);
    expect(first === 'hung' ? first : first.status).toBe(200);
    // The request's own slot (the account's, from its address) was given back, and the answer did not wait.
    expect(released.filter((key) => key.endsWith(`{${w.account.id}}:inflight:203.0.113.60`))).toHaveLength(1);

    // With the real release, not awaited either: one slot, one request after another, each answered with 200
    // and each finding the slot its predecessor gave back (its release reached Redis before the next admission).
    const path = `/v1/campaign/${w.campaign.id}/loyalty-action`;
    const email = uniqueEmail();
    let n = 0;
    const replies = await times(20, () =>
      api(w.key, '203.0.113.61').post(path, {
        participantEmail: email,
        rewardId: w.reward.id,
        metadata: { n: n++ },
      }),
    );
    expect(replies.map((r) => r.status)).toEqual(Array(20).fill(200));
  });

  it('gives the slot back in Redis before the answer is out: another process finds it free at once', async () => {
    const limiter = stack.deps.limits!;
    const keys: string[] = [];
    const watched = {
      ...limiter,
      admit: async (input: Parameters<typeof limiter.admit>[0]) => {
        const admission = await limiter.admit(input);
        if (admission?.lease) keys.push(admission.lease.key);
        return admission;
      },
    };
    const app = createApp({ ...stack.deps, limits: watched });
    // Another API process's connection: not auto-pipelined, so what it asks leaves at once.
    const other = createRedis(REDIS_URL);
    try {
      await redisReady(other);
      const w = await world({ concurrency: 5 });
      const path = `/v1/campaign/${w.campaign.id}/loyalty-action`;
      const send = () =>
        clientFrom(app, w.key, '203.0.113.62').post(path, {
          participantEmail: uniqueEmail(),
          rewardId: w.reward.id,
        });
      // One at a time: each answer's slot is free in Redis by the time the answer is in.
      for (const n of [1, 2, 3]) {
        expect([n, (await send()).status]).toEqual([n, 200]);
        expect(await other.zcard(keys.at(-1)!)).toBe(0);
      }
      // Five at once, answered together by one group commit, give their slots back together.
      const replies = await Promise.all([1, 2, 3, 4, 5].map(send));
      expect(replies.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
      expect(await other.zcard(keys.at(-1)!)).toBe(0);
    } finally {
      other.disconnect();
    }
  });

  it('gives back in one turn the slots of several accounts, each freed (on a Redis Cluster, key by key)', async () => {
    const limiter = stack.deps.limits!;
    // Two accounts: their keys are in different hash slots, which one pipeline cannot cross on a Cluster.
    const worlds = [await world({ concurrency: 5 }), await world({ concurrency: 5 })];
    const leases = await Promise.all(
      worlds.map(async (w) => {
        const admission = await limiter.admit({
          apiKeyId: w.keyId,
          accountId: w.account.id,
          clientIp: '203.0.113.63',
          write: false,
          limits: { second: 1000, minute: 1000, hour: 1000, concurrency: 5, slowdownAfter: 0 },
          budgetMs: 1000,
        });
        return admission!.lease!;
      }),
    );
    for (const lease of leases) expect(await stack.redis.zcard(lease.key)).toBe(1);
    await Promise.all(leases.map((lease) => limiter.release(lease)));
    for (const lease of leases) expect(await stack.redis.zcard(lease.key)).toBe(0);
  });

  it('a lease nobody releases (its process died) expires by itself', async () => {
    const w = await world({ concurrency: 1 });
    const limiter = stack.deps.limits!;
    const lease = await limiter.admit({
      apiKeyId: w.keyId,
      accountId: w.account.id,
      clientIp: '203.0.113.50',
      write: false,
      limits: { second: 1000, minute: 1000, hour: 1000, concurrency: 1, slowdownAfter: 0 },
      budgetMs: 1000,
    });
    expect(lease?.admitted).toBe(true);
    // Never released. The lease lasts the request's budget plus a 5 s margin.
    const r1 = await api(w.key, '203.0.113.50').get('/v1/campaigns');
    expect(expectErrorShape(r1, 429, 'RATE_LIMIT').policyName).toBe('CONCURRENCY');
    clock.advance(6001);
    expect((await api(w.key, '203.0.113.50').get('/v1/campaigns')).status).toBe(200);
  });
});

describe('edges of the edge', () => {
  it("a slowed write gets its delay on top of the request's time budget, instead of a 503", async () => {
    const app = createApp({ ...stack.deps, requestTimeoutMs: 150 });
    const w = await world({ second: 1000, minute: 1000, slowdownAfter: 1 });
    clock.advance(3_600_000);
    const at = clientFrom(app, w.key, '198.51.100.20');
    const post = () => at.post('/v1/campaign/nope/participant', { email: 'a@example.com' });
    await post();
    await post();
    // The third write waits 200 ms, longer than the whole 150 ms budget.
    const slowed = await post();
    expect(slowed.headers.get('stampcard-slowdown-milliseconds')).toBe('200');
    expectErrorShape(slowed, 404, 'NOT_FOUND');
  });

  it('a slowed write holds no database connection while it waits', async () => {
    // One connection for the whole app: a read sent while the write waits must not queue behind it.
    const pool = createDb(stack.dbUrl, { max: 1 });
    try {
      const app = createApp({ ...stack.deps, db: pool.db });
      const w = await world({ second: 1000, minute: 1000, slowdownAfter: 1 });
      clock.advance(3_600_000);
      const at = clientFrom(app, w.key, '198.51.100.21');
      const post = () => at.post('/v1/campaign/nope/participant', { email: 'a@example.com' });
      await post();
      await post();
      const order: string[] = [];
      // The third write waits 200 ms before it reads anything.
      const slowed = post().then((r) => {
        order.push('write');
        return r;
      });
      await new Promise((r) => setTimeout(r, 50));
      const read = await at.get(`/v1/campaign/${w.campaign.id}`);
      order.push('read');
      expect(read.status).toBe(200);
      expect((await slowed).headers.get('stampcard-slowdown-milliseconds')).toBe('200');
      expect(order).toEqual(['read', 'write']);
    } finally {
      await pool.close();
    }
  });

  it('behind trusted proxies, the address the outermost one saw counts; without, X-Forwarded-For is ignored', async () => {
    let seen: string | undefined;
    const limits = stack.deps.limits!;
    const spy = {
      ...limits,
      admit: (input: Parameters<typeof limits.admit>[0]) => {
        seen = input.clientIp;
        return limits.admit(input);
      },
    };
    const w = await world();
    const send = async (hops: number, forwardedFor: string) => {
      const app = createApp({ ...stack.deps, limits: spy, trustedProxyHops: hops });
      await clientFrom(app, w.key, '10.0.0.2').get('/v1/campaigns', { 'x-forwarded-for': forwardedFor });
      return seen;
    };
    expect(await send(0, '203.0.113.1')).toBe('10.0.0.2');
    // One proxy (10.0.0.2) appended the client's address; what the client wrote before it is not trusted.
    expect(await send(1, 'spoofed, 203.0.113.1')).toBe('203.0.113.1');
    expect(await send(2, '192.0.2.4, 203.0.113.1')).toBe('192.0.2.4');
    // A malformed entry falls back to the socket's peer.
    expect(await send(1, 'not-an-ip')).toBe('10.0.0.2');
    expect(await send(1, '::ffff:192.0.2.9')).toBe('192.0.2.9');
  });
});
