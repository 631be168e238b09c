import { randomBytes } from 'node:crypto';
import { Redis, type RedisOptions } from 'ioredis';

/** The Redis the tests share (other runs use it at the same time: only a test's own keys are ever deleted). */
export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/**
 * Runs `fn` on a connection of its own to `redisUrl` (one try per command), closed after it, so it also runs
 * after the stack's connections are closed or gave up. A Redis already stopped fails `fn`: its connection errors
 * are not news beyond that.
 */
export async function withOwnRedis<T>(
  redisUrl: string,
  fn: (redis: Redis) => Promise<T>,
  options: RedisOptions = {},
): Promise<T> {
  const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1, ...options });
  redis.on('error', () => {});
  try {
    await redis.connect();
    return await fn(redis);
  } finally {
    redis.disconnect();
  }
}

/**
 * Deletes every key under `prefix:` (SCAN, never KEYS, which blocks a shared Redis; UNLINK frees memory off
 * the main thread), on a connection of its own, so it also runs after the stack's connections are closed: a
 * queue or worker closing writes its keys last. Answers how many it deleted.
 */
export function deleteRedisKeys(redisUrl: string, prefix: string): Promise<number> {
  return withOwnRedis(redisUrl, async (redis) => {
    let deleted = 0;
    for await (const keys of keysUnder(redis, prefix)) deleted += await redis.unlink(...keys);
    return deleted;
  });
}

/** Every key under `prefix:`, a SCAN batch at a time (never KEYS, which blocks a shared Redis); no empty batch. */
export async function* keysUnder(redis: Redis, prefix: string): AsyncGenerator<string[]> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length > 0) yield keys;
  } while (cursor !== '0');
}

/**
 * What a stuck run's queues hold, for its error: each list, sorted set and stream under `prefix:` (a queue's wait,
 * active, delayed, marker…) with its size, and how many other keys (jobs' hashes, locks, meta). A batch's types are
 * asked together, then its sizes together: one round trip each, not one a key.
 */
export async function queueSizes(redis: Redis, prefix: string): Promise<string> {
  const queues: string[] = [];
  let others = 0;
  for await (const keys of keysUnder(redis, prefix)) {
    const types = await Promise.all(keys.map((key) => redis.type(key)));
    const sizes = await Promise.all(
      keys.map((key, i) =>
        types[i] === 'list'
          ? redis.llen(key)
          : types[i] === 'zset'
            ? redis.zcard(key)
            : types[i] === 'stream'
              ? redis.xlen(key)
              : null,
      ),
    );
    keys.forEach((key, i) => {
      if (sizes[i] === null) others++;
      else queues.push(`${key.slice(prefix.length + 1)} ${sizes[i]}`);
    });
  }
  return `${queues.sort().join(', ') || 'no queue'}; ${others} other keys (jobs, locks, meta)`;
}

/** `queueSizes` on a connection of its own (given 2 s to connect), or why Redis could not be read. */
export function queueSizesAt(redisUrl: string, prefix: string): Promise<string> {
  return withOwnRedis(redisUrl, (redis) => queueSizes(redis, prefix), { connectTimeout: 2000 }).catch(
    (err: Error) => err.message,
  );
}

/** `<name>_<12 hex>`: a queue prefix (QUEUE_PREFIX) no other test run uses. */
export const uniquePrefix = (name: string) => `${name}_${randomBytes(6).toString('hex')}`;
