import { Redis, type RedisOptions } from 'ioredis';

/**
 * A Redis connection as BullMQ wants it: commands wait (no per-request retry limit) while Redis reconnects,
 * so a blip delays work instead of failing it.
 */
export function createRedis(url: string, opts: RedisOptions = {}): Redis {
  return new Redis(url, { maxRetriesPerRequest: null, enableReadyCheck: true, ...opts });
}

/** Resolves once the connection is ready (needed before use when the offline queue is off). */
export function redisReady(redis: Redis, timeoutMs = 5000): Promise<void> {
  if (redis.status === 'ready') return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`Redis not ready after ${timeoutMs} ms`));
    }, timeoutMs);
    const onReady = () => {
      cleanup();
      resolve();
    };
    const cleanup = () => {
      clearTimeout(timer);
      redis.off('ready', onReady);
    };
    redis.on('ready', onReady);
  });
}
