import { createRateLimiter, limiterConnection } from '@stampcard/api';
import { createLogger } from '@stampcard/config';
import { type EffectiveLimits, manualClock } from '@stampcard/core';
import { createRedis, redisReady } from '@stampcard/jobs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usePrefix } from '../../../test/support/use';

/**
 * The limiter's Lua script itself, against the real Redis, on a manual clock: each window's edge is walked to
 * the millisecond, and the slowdown formula is read off the script's answers. The numbers are the seed's,
 * written out here (not read from core's table), so a change to the table or to the script shows.
 */
const redis = limiterConnection(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', 2000);
const prefix = usePrefix('stampcard_test_limiter');
const clock = manualClock('2026-11-23T10:00:00.000Z');
const limiter = createRateLimiter({
  redis,
  prefix,
  clock,
  logger: createLogger({ level: 'silent', name: 'stampcard-test' }),
});

beforeAll(() => redisReady(redis));
afterAll(() => redis.disconnect());

const OPEN = { second: 1000, minute: 1000, hour: 1000, concurrency: 1000, slowdownAfter: 0 };
let keys = 0;

/** A fresh API key's limiter: each call one request, released at once (concurrency is not under test here). */
async function keyWith(limits: Partial<EffectiveLimits>) {
  const apiKeyId = `key_${++keys}`;
  return async (write = false) => {
    const admission = await limiter.admit({
      apiKeyId,
      accountId: 'acc_limiter',
      clientIp: '198.51.100.1',
      write,
      limits: { ...OPEN, ...limits },
      budgetMs: 1000,
    });
    if (!admission) throw new Error('Redis did not answer the limiter');
    if (admission.lease) await limiter.release(admission.lease);
    return admission;
  };
}

describe('the rate windows of the script (5 s, a minute, an hour), each sliding to the millisecond', () => {
  const cases = [
    { policy: 'SECOND', windowMs: 5000, limits: { second: 2 } },
    { policy: 'MINUTE', windowMs: 60_000, limits: { minute: 2 } },
    { policy: 'HOUR', windowMs: 3_600_000, limits: { hour: 2 } },
  ] as const;

  for (const { policy, windowMs, limits } of cases) {
    it(`${policy}: a full window refuses until its oldest request is ${windowMs} ms old`, async () => {
      const send = await keyWith(limits);
      clock.advance(3_600_000 * 2);
      const start = clock.now().getTime();
      expect((await send()).admitted).toBe(true);
      clock.set(start + 1);
      const second = await send();
      expect(second.admitted).toBe(true);
      // The request that fills the window says when room comes back: when the first leaves it.
      expect(second.counts[policy]).toEqual({ used: 2, retryAfterMs: windowMs - 1, resetMs: windowMs - 1 });

      clock.set(start + windowMs - 1);
      const refused = await send();
      expect(refused).toMatchObject({ admitted: false, policy });
      expect(refused.counts[policy].retryAfterMs).toBe(1);

      clock.set(start + windowMs);
      const again = await send();
      expect(again.admitted).toBe(true);
      // The first left the window; the refused one was never counted.
      expect(again.counts[policy].used).toBe(2);
      expect(again.counts[policy].retryAfterMs).toBe(1);
    });
  }
});

describe('the write slowdown of the script: past the threshold, the n-th write over it waits n × 100 ms', () => {
  it('counts writes over a minute, and only writes', async () => {
    const send = await keyWith({ slowdownAfter: 2 });
    clock.advance(3_600_000 * 2);
    const start = clock.now().getTime();
    const delays: number[] = [];
    for (let i = 0; i < 5; i++) {
      const a = await send(true);
      if (!a.admitted) throw new Error('refused');
      delays.push(a.slowdownMs);
      // Reads in between neither wait nor count.
      const read = await send(false);
      expect(read).toMatchObject({ admitted: true, slowdownMs: 0 });
    }
    expect(delays).toEqual([0, 0, 100, 200, 300]);

    // 59,999 ms after the five (all at one instant) they are still in the minute: the 6th write is 4 over.
    clock.set(start + 59_999);
    expect(await send(true)).toMatchObject({ admitted: true, slowdownMs: 400 });
    // At 60,000 ms the first five have left it (they came at the same instant): this is the 2nd in the minute.
    clock.set(start + 60_000);
    expect(await send(true)).toMatchObject({ admitted: true, slowdownMs: 0 });
  });

  it("follows the seed's examples at its threshold of 60: the 61st 100 ms, the 63rd 300 ms, the 70th 1,000 ms", async () => {
    const send = await keyWith({ slowdownAfter: 60 });
    clock.advance(3_600_000 * 2);
    const delays: number[] = [];
    for (let i = 1; i <= 70; i++) {
      const a = await send(true);
      delays.push(a.admitted ? a.slowdownMs : -1);
    }
    expect(delays.slice(0, 60).every((d) => d === 0)).toBe(true);
    expect([delays[60], delays[62], delays[69]]).toEqual([100, 300, 1000]);
  });

  it('is off at a threshold of 0', async () => {
    const send = await keyWith({ slowdownAfter: 0 });
    clock.advance(3_600_000 * 2);
    for (let i = 0; i < 70; i++) expect(await send(true)).toMatchObject({ admitted: true, slowdownMs: 0 });
  });
});

describe("a request's slot, given back", () => {
  // Another API process's connection to the same Redis: not auto-pipelined, so what it sends leaves at once.
  const other = createRedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
  beforeAll(() => redisReady(other));
  afterAll(() => other.disconnect());

  const admitOne = async (clientIp: string) => {
    const admission = await limiter.admit({
      apiKeyId: `key_${++keys}`,
      accountId: 'acc_release',
      clientIp,
      write: true,
      limits: { ...OPEN, concurrency: 10 },
      budgetMs: 1000,
    });
    return admission!.lease!;
  };

  it('is on its way to Redis before its caller goes on past its next await, ahead of anything sent after it', async () => {
    const lease = await admitOne('198.51.100.2');
    expect(await other.zcard(lease.key)).toBe(1);
    // Not awaited, as a request's answer does not wait for it; what another process asks once the caller has
    // gone on (a caller's next request, sent once this one is answered) finds the slot free.
    void limiter.release(lease);
    await Promise.resolve();
    expect(await other.zcard(lease.key)).toBe(0);
  });

  it('leaves with every slot given back in the same turn, in one socket write, whatever their keys', async () => {
    const leases = [
      ...(await Promise.all([1, 2, 3].map(() => admitOne('198.51.100.3')))),
      ...(await Promise.all([1, 2].map(() => admitOne('198.51.100.4')))),
    ];
    expect(await other.zcard(leases[0]!.key)).toBe(3);
    expect(await other.zcard(leases[4]!.key)).toBe(2);
    const stream = (redis as unknown as { stream: { write: (...args: unknown[]) => boolean } }).stream;
    const write = stream.write;
    let writes = 0;
    stream.write = function (this: unknown, ...args: unknown[]) {
      writes += 1;
      return write.apply(this, args);
    };
    try {
      // As the requests a group commit answered together give theirs back: each its own chain of awaits, all
      // resumed in the same turn.
      const answered: Promise<void>[] = [];
      await Promise.all(
        leases.map(async (lease) => {
          await null;
          answered.push(limiter.release(lease));
          await null;
        }),
      );
      await Promise.all(answered);
    } finally {
      stream.write = write;
    }
    expect(writes).toBe(1);
    expect(await other.zcard(leases[0]!.key)).toBe(0);
    expect(await other.zcard(leases[4]!.key)).toBe(0);
  });
});
