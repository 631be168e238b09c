import { type JobsOptions, Queue } from 'bullmq';
import { Redis, type RedisOptions } from 'ioredis';
import { z } from 'zod';

/**
 * The job catalog, shared by producers (API, relay) and consumers (worker): each job's queue, name,
 * payload schema and retry policy are declared here once.
 */
export const jobs = {
  applyLoyaltyAction: {
    queue: 'loyalty-actions',
    name: 'loyalty-action.apply',
    payload: z.strictObject({ actionId: z.string().startsWith('act_') }),
    options: {
      attempts: 8,
      backoff: { type: 'exponential', delay: 500 },
      removeOnComplete: { age: 3600, count: 10_000 },
      removeOnFail: { age: 7 * 24 * 3600 },
    } satisfies JobsOptions,
  },
} as const;

export type ApplyLoyaltyActionPayload = z.infer<typeof jobs.applyLoyaltyAction.payload>;
export const QUEUE_NAMES = [jobs.applyLoyaltyAction.queue] as const;

/**
 * A Redis connection as BullMQ wants it: commands wait (no per-request retry limit) while Redis reconnects,
 * so a blip delays work instead of failing it.
 */
export function createRedis(url: string, opts: RedisOptions = {}): Redis {
  return new Redis(url, { maxRetriesPerRequest: null, enableReadyCheck: true, ...opts });
}

export type Queues = {
  loyaltyActions: Queue;
  all: Queue[];
  close(): Promise<void>;
};

/**
 * The service's queues on one connection.
 * @param onError receives connection errors the queues report (BullMQ prints them when nobody listens).
 */
export function createQueues(connection: Redis, prefix: string, onError?: (err: Error) => void): Queues {
  const loyaltyActions = new Queue(jobs.applyLoyaltyAction.queue, { connection, prefix });
  const all = [loyaltyActions];
  if (onError) for (const q of all) q.on('error', onError);
  return {
    loyaltyActions,
    all,
    close: async () => {
      await Promise.all(all.map((q) => q.close()));
    },
  };
}

/** Puts accepted actions in the queue. The job id is the action id, so an action already queued is not added twice. */
export async function enqueueActions(queues: Queues, actionIds: string[]): Promise<void> {
  if (actionIds.length === 0) return;
  const { name, options } = jobs.applyLoyaltyAction;
  await queues.loyaltyActions.addBulk(
    actionIds.map((actionId) => ({ name, data: { actionId }, opts: { ...options, jobId: actionId } })),
  );
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

/** One side of the queue wiring: a Redis connection and the queues on it. */
export type QueueSide = { redis: Redis; queues: Queues };

export type QueueConnections = {
  /** For the request path (API, relay checks): fails fast while Redis is away instead of holding a request. */
  producer: QueueSide;
  /** For workers: commands wait while Redis reconnects, as BullMQ requires. */
  consumer: QueueSide;
  /** Closes the queues and both connections. */
  close(): Promise<void>;
};

/**
 * Connects the two sides every process shape needs, waits until both are ready, and routes connection and
 * queue errors to `onError` (BullMQ prints them when nobody listens).
 */
export async function connectQueues(
  redisUrl: string,
  prefix: string,
  onError: (err: Error, side: 'producer' | 'consumer') => void,
): Promise<QueueConnections> {
  const side = async (name: 'producer' | 'consumer', opts: RedisOptions): Promise<QueueSide> => {
    const redis = createRedis(redisUrl, opts);
    redis.on('error', (err) => onError(err, name));
    await redisReady(redis);
    return { redis, queues: createQueues(redis, prefix, (err) => onError(err, name)) };
  };
  const [producer, consumer] = await Promise.all([
    // A Redis that stops answering must not hold a request: its commands give up after 2 s.
    side('producer', { maxRetriesPerRequest: 1, enableOfflineQueue: false, commandTimeout: 2000 }),
    side('consumer', {}),
  ]);
  return {
    producer,
    consumer,
    close: async () => {
      await Promise.all([producer.queues.close(), consumer.queues.close()]);
      producer.redis.disconnect();
      consumer.redis.disconnect();
    },
  };
}
