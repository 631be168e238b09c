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

/**
 * Warns when Redis may evict keys under memory pressure: queued jobs, rate-limit windows and leases would
 * vanish silently. Redis must run with `maxmemory-policy noeviction` (the Compose file sets it). A Redis that
 * refuses `CONFIG GET` (some managed services do) is not checked, and that is logged too.
 */
export async function warnOnEvictionPolicy(
  redis: Redis,
  logger: { warn(obj: object, msg: string): void },
): Promise<string | null> {
  try {
    const reply = (await redis.config('GET', 'maxmemory-policy')) as string[];
    const policy = reply[1] ?? null;
    if (policy !== null && policy !== 'noeviction') {
      logger.warn(
        { maxmemoryPolicy: policy },
        'Redis maxmemory-policy is not noeviction: under memory pressure Redis may drop queued jobs and rate-limit state; set maxmemory-policy noeviction',
      );
    }
    return policy;
  } catch (err) {
    logger.warn(
      { err },
      'Redis maxmemory-policy could not be read (CONFIG GET refused); it must be noeviction',
    );
    return null;
  }
}
