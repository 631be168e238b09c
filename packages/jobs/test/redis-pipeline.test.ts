import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import v8 from 'node:v8';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REDIS_URL } from '../../../test/support/redis-keys';
import { usePrefix } from '../../../test/support/use';
import { createRedis, type RedisClient, redisReady } from '../src/index';

/**
 * patches/ioredis+6.0.0.patch (packages/jobs/README.md): every pipeline (the limiter's auto-pipelined
 * admissions, BullMQ's adds and moves) had a hidden class of its own, which pointed back to it, so that it and
 * what it held outlived the young-generation collections. V8's own test of that: two pipelines share their map.
 */
v8.setFlagsFromString('--allow-natives-syntax');
const haveSameMap = new Function('a', 'b', 'return %HaveSameMap(a, b)') as (a: object, b: object) => boolean;

const prefix = usePrefix('stampcard_pipeline');
let redis: RedisClient;
beforeAll(async () => {
  redis = createRedis(REDIS_URL);
  await redisReady(redis);
});
afterAll(() => redis.disconnect());

describe('the ioredis pipeline patch (patches/, packages/jobs/README.md)', () => {
  it('is for the ioredis installed', () => {
    const require = createRequire(import.meta.url);
    const manifest = require.resolve('ioredis/package.json');
    const { version } = JSON.parse(readFileSync(manifest, 'utf8')) as { version: string };
    expect(readdirSync(new URL('../../../patches/', import.meta.url))).toContain(`ioredis+${version}.patch`);
  });

  it('gives every pipeline the same hidden class, its length read through the prototype', async () => {
    const first = redis.pipeline();
    const second = redis.pipeline();
    expect(haveSameMap(first, second)).toBe(true);
    expect(Object.getOwnPropertyDescriptor(first, 'length')).toBeUndefined();

    const key = `${prefix}:counter`;
    first.set(key, '1').incr(key).get(key);
    expect(first.length).toBe(3);
    expect(second.length).toBe(0);
    expect(await first.exec()).toEqual([
      [null, 'OK'],
      [null, 2],
      [null, '2'],
    ]);
  });

  it('still answers each auto-pipelined command with its own reply', async () => {
    const auto = createRedis(REDIS_URL, { enableAutoPipelining: true });
    try {
      await redisReady(auto);
      const key = `${prefix}:auto`;
      const replies = await Promise.all(Array.from({ length: 50 }, () => auto.incr(key)));
      expect(replies.sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    } finally {
      auto.disconnect();
    }
  });
});
