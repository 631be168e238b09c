import { describe, expect, it } from 'vitest';
import { freePort } from './support/processes';
import {
  deleteRedisKeys,
  queueSizes,
  queueSizesAt,
  REDIS_URL,
  uniquePrefix,
  withOwnRedis,
} from './support/redis-keys';

/**
 * What a stuck run's failure message says of its queues (`whyStuck`, `failoverUnderLoad`, the PostgreSQL restart
 * test): read here on the shared Redis, under a prefix of this test's own.
 */
describe("the queues' sizes, for a stuck run's message", () => {
  it('names each list, sorted set and stream under the prefix with its size, and counts the other keys', async () => {
    const prefix = uniquePrefix('stampcard_sizes');
    const other = uniquePrefix('stampcard_sizes_other');
    try {
      const said = await withOwnRedis(REDIS_URL, async (redis) => {
        expect(await queueSizes(redis, prefix)).toBe('no queue; 0 other keys (jobs, locks, meta)');
        await redis.rpush(`${prefix}:q:wait`, 'a', 'b', 'c');
        await redis.zadd(`${prefix}:q:delayed`, 1, 'x', 2, 'y');
        await redis.xadd(`${prefix}:q:events`, '*', 'event', 'added');
        await redis.hset(`${prefix}:q:1`, 'name', 'job');
        await redis.set(`${prefix}:q:1:lock`, 'token');
        // Another prefix's keys are not this run's.
        await redis.rpush(`${other}:q:wait`, 'z');
        return queueSizes(redis, prefix);
      });
      expect(said).toBe('q:delayed 2, q:events 1, q:wait 3; 2 other keys (jobs, locks, meta)');
    } finally {
      expect(await deleteRedisKeys(REDIS_URL, prefix)).toBe(5);
      expect(await deleteRedisKeys(REDIS_URL, other)).toBe(1);
    }
  });

  it('answers why Redis could not be read, on a connection of its own, rather than failing the message', async () => {
    const port = await freePort();
    const said = await queueSizesAt(`redis://127.0.0.1:${port}`, 'stampcard_nothing');
    expect(said).toMatch(/ECONNREFUSED|Connection is closed/);
  });
});
