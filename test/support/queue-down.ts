import { createQueues, createRedis, type Queues, type RedisClient } from '@stampcard/jobs';

/**
 * Redis as it is when it is down: a connection to port 1 (nothing listens there, so it is refused at once,
 * never retried) and the service's queues on it. `createApp({ ...stack.deps, redis, queues })` builds an API
 * whose every enqueue fails; `close()` when done.
 */
export function queueDown(): { redis: RedisClient; queues: Queues; close(): Promise<void> } {
  const redis = createRedis('redis://127.0.0.1:1', {
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    retryStrategy: () => null,
  });
  redis.on('error', () => {});
  const queues = createQueues(redis, 'stampcard_dead', () => {});
  return {
    redis,
    queues,
    close: async () => {
      await queues.close().catch(() => {});
      redis.disconnect();
    },
  };
}
