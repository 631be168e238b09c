import { type Scheduled, unavailable } from '@stampcard/core';
import { Queue } from 'bullmq';
import type { ClusterOptions, RedisOptions } from 'ioredis';
import {
  currentJobName,
  JOBS,
  type JobName,
  type JobPayload,
  QUEUE_NAMES,
  type QueueName,
  shardNames,
} from './catalog';
import { createRedis, queuePrefix, type RedisClient, type RedisTarget, redisReady } from './redis';

export type Queues = {
  /** The queue a job of the catalog goes to (of a sharded job, its first shard: read every one with `shardsOf`). */
  forJob(name: JobName): Queue;
  /** Every queue a job of this kind may be in: its queue's shards (one unless the job is sharded). */
  shardsOf(name: JobName): Queue[];
  /** The queue the next job of this kind goes to: its shards in turn. */
  nextShard(name: JobName): Queue;
  all: Queue[];
  close(): Promise<void>;
};

/**
 * The service's queues on one connection, each sharded queue split in `shards` (`QUEUE_SHARDS`, see
 * `shardNames`): on a Redis Cluster each shard is a slot of its own, so the hot queue's work spreads over the
 * masters.
 * @param onError receives connection errors the queues report (BullMQ prints them when nobody listens).
 */
export function createQueues(
  connection: RedisClient,
  prefix: string,
  onError?: (err: Error) => void,
  shards = 1,
): Queues {
  const byName = new Map<QueueName, Queue[]>(
    QUEUE_NAMES.map((name) => [
      name,
      shardNames(name, shards, prefix).map(
        // No version check: BullMQ makes it (an INFO) once, as the queue is made, and a queue whose check
        // failed fails every later command for the life of the process. On the producer's connection, which
        // gives up after 2 s, one slow moment of Redis at start-up did that. A queue sends no blocking command,
        // which is all the version decides; the workers' connections still check it.
        (shard) =>
          new Queue(shard, {
            connection,
            prefix: queuePrefix(prefix, shard, connection),
            skipVersionCheck: true,
          }),
      ),
    ]),
  );
  const all = [...byName.values()].flat();
  if (onError) for (const q of all) q.on('error', onError);
  const shardsOf = (name: JobName) => byName.get(JOBS[name].queue)!;
  const turns = new Map<QueueName, number>();
  return {
    forJob: (name) => shardsOf(name)[0]!,
    shardsOf,
    nextShard: (name) => {
      const list = shardsOf(name);
      if (list.length === 1) return list[0]!;
      const queue = JOBS[name].queue;
      const turn = turns.get(queue) ?? 0;
      turns.set(queue, (turn + 1) % list.length);
      return list[turn]!;
    },
    all,
    close: async () => {
      await Promise.all(all.map((q) => q.close()));
    },
  };
}

/** A queue's jobs by state, as the operator API and the console show them. */
export type QueueCounts = {
  name: string;
  waiting: number;
  active: number;
  delayed: number;
  failed: number;
  completed: number;
};

/** Each queue's waiting, active, delayed, failed and completed jobs; Redis not answering is `UNAVAILABLE`. */
export async function queueCounts(queues: Queues): Promise<QueueCounts[]> {
  return Promise.all(
    queues.all.map(async (q) => {
      const counts = await q
        .getJobCounts('waiting', 'active', 'delayed', 'failed', 'completed')
        .catch((err: unknown) => {
          throw unavailable('Redis does not answer: queue counts are unavailable, retry later', err);
        });
      return {
        name: q.name,
        waiting: counts.waiting ?? 0,
        active: counts.active ?? 0,
        delayed: counts.delayed ?? 0,
        failed: counts.failed ?? 0,
        completed: counts.completed ?? 0,
      };
    }),
  );
}

/** One job to add: its payload, an id that makes adding it again a no-op, and how long it waits to run. */
export type NewJob<N extends JobName> = { payload: JobPayload<N>; jobId?: string; delayMs?: number };

/**
 * Adds jobs of one kind in one round trip, with the catalog's retry policy. Producers enqueue only through
 * this, so a job's name always travels with the payload type the catalog gives it. The jobs of a sharded kind
 * go to its next shard in turn (one call, one shard: still one round trip).
 */
export async function enqueue<N extends JobName>(queues: Queues, name: N, list: NewJob<N>[]): Promise<void> {
  if (list.length === 0) return;
  const { options } = JOBS[name];
  await queues.nextShard(name).addBulk(
    list.map(({ payload, jobId, delayMs }) => ({
      name,
      data: payload,
      opts: {
        ...options,
        ...(jobId ? { jobId } : {}),
        ...(delayMs ? { delay: Math.max(0, Math.round(delayMs)) } : {}),
      },
    })),
  );
}

const LIVE_STATES = new Set(['waiting', 'active', 'delayed', 'prioritized', 'waiting-children']);

/**
 * Makes sure each job (by its id) is live in its queue: added when missing, added again when it has finished
 * (completed or failed), left alone while it waits, runs or is delayed. The relays and the operator's
 * replay use it, since adding a job whose id BullMQ still keeps, even finished, does nothing.
 * Answers how many were added and how many of those had finished before.
 */
export async function ensureJobs<N extends JobName>(
  queues: Queues,
  name: N,
  list: (NewJob<N> & { jobId: string })[],
): Promise<{ added: number; restarted: number }> {
  const queue = queues.forJob(name);
  const toAdd: (NewJob<N> & { jobId: string })[] = [];
  let restarted = 0;
  for (let i = 0; i < list.length; i += 50) {
    const chunk = list.slice(i, i + 50);
    await Promise.all(
      chunk.map(async (item) => {
        const job = await queue.getJob(item.jobId);
        if (!job) return void toAdd.push(item);
        const state = await job.getState();
        if (LIVE_STATES.has(state)) return;
        // Finished, or gone between the two reads: remove what is left so the same id can be added again.
        await job.remove().catch(() => {});
        restarted += 1;
        toAdd.push(item);
      }),
    );
  }
  await enqueue(queues, name, toAdd);
  return { added: toAdd.length, restarted };
}

/** A message's delivery job id: one job per generation of the message. */
export const deliveryJobId = (m: { messageId: string; generation: number }) =>
  `${m.messageId}-${m.generation}`;

/** Most messages of one endpoint delivered by one `webhook-message-batch.deliver` job. */
export const DELIVERY_BATCH = 64;

/**
 * Puts webhook messages (at their current generation) in the delivery queue, in one round trip: those whose
 * endpoint is known in `webhook-message-batch.deliver` jobs of up to `DELIVERY_BATCH` per endpoint, any other
 * as its own `webhook-message.deliver` job.
 */
export async function scheduleDeliveries(
  queues: Queues,
  list: (Scheduled & { traceparent?: string | null })[],
): Promise<void> {
  const byEndpoint = new Map<string, { messageId: string; generation: number; traceparent?: string }[]>();
  const alone: (Scheduled & { traceparent?: string | null })[] = [];
  for (const m of list) {
    if (!m.endpointId) {
      alone.push(m);
      continue;
    }
    const group = byEndpoint.get(m.endpointId) ?? [];
    group.push({
      messageId: m.messageId,
      generation: m.generation,
      ...(m.traceparent ? { traceparent: m.traceparent } : {}),
    });
    byEndpoint.set(m.endpointId, group);
  }
  const batches = [...byEndpoint].flatMap(([endpointId, messages]) =>
    Array.from({ length: Math.ceil(messages.length / DELIVERY_BATCH) }, (_, i) => ({
      payload: { endpointId, messages: messages.slice(i * DELIVERY_BATCH, (i + 1) * DELIVERY_BATCH) },
    })),
  );
  await Promise.all([
    enqueue(queues, 'webhook-message-batch.deliver', batches),
    enqueue(
      queues,
      'webhook-message.deliver',
      alone.map(({ messageId, generation, traceparent }) => ({
        payload: { messageId, generation, ...(traceparent ? { traceparent } : {}) },
        jobId: deliveryJobId({ messageId, generation }),
      })),
    ),
  ]);
}

/**
 * Puts messages that could not be sent now back in the queue, each as its own job due after its delay (one
 * round trip). The job id is the message's (`deliveryJobId`), so handing the same message over twice makes
 * one job.
 */
export async function deferDeliveries(
  queues: Queues,
  list: { messageId: string; generation: number; delayMs: number; traceparent?: string }[],
): Promise<void> {
  await enqueue(
    queues,
    'webhook-message.deliver',
    list.map(({ messageId, generation, delayMs, traceparent }) => ({
      payload: { messageId, generation, ...(traceparent ? { traceparent } : {}) },
      jobId: deliveryJobId({ messageId, generation }),
      delayMs,
    })),
  );
}

/** A batch of an endpoint's backlog operation: the payload of `webhook-backlog.run`. */
export type BacklogStepJob = JobPayload<'webhook-backlog.run'>;

/** A backlog batch's job id: one job per batch of an operation. */
export const backlogJobId = (s: BacklogStepJob) => `backlog-${s.endpointId}-${s.operation}-${s.batch}`;

/** Queues the next batch of backlog operations, each once (by `backlogJobId`), in one round trip. */
export function enqueueBacklogSteps(queues: Queues, steps: BacklogStepJob[]): Promise<void> {
  return enqueue(
    queues,
    'webhook-backlog.run',
    steps.map((payload) => ({ payload, jobId: backlogJobId(payload) })),
  );
}

/** A batch of a participant's erasure: the payload of `participant-erasure.run`. */
export type ErasureStepJob = JobPayload<'participant-erasure.run'>;

/** An erasure batch's job id: one job per batch of an erasure. */
export const erasureJobId = (s: ErasureStepJob) => `erasure-${s.participantId}-${s.batch}`;

/** Queues the next batch of erasures, each once (by `erasureJobId`), in one round trip. */
export function enqueueErasureSteps(queues: Queues, steps: ErasureStepJob[]): Promise<void> {
  return enqueue(
    queues,
    'participant-erasure.run',
    steps.map((payload) => ({ payload, jobId: erasureJobId(payload) })),
  );
}

/** A batch of a participant import: the payload of `participant-import.run`. */
export type ImportStepJob = JobPayload<'participant-import.run'>;

/** An import batch's job id: one job per batch of an import. */
export const importJobId = (s: ImportStepJob) => `import-${s.importId}-${s.batch}`;

/** Queues the next batch of imports, each once (by `importJobId`), in one round trip. */
export function enqueueImportSteps(queues: Queues, steps: ImportStepJob[]): Promise<void> {
  return enqueue(
    queues,
    'participant-import.run',
    steps.map((payload) => ({ payload, jobId: importJobId(payload) })),
  );
}

/** Most actions in one `loyalty-action-batch.apply` job. */
export const ACTION_BATCH = 64;

/**
 * Puts accepted actions in the queue in one round trip: `loyalty-action-batch.apply` jobs of up to
 * `ACTION_BATCH` actions each. Applying is idempotent (an action no longer QUEUED is skipped), so an action that reaches the
 * queue twice (the relay found it late) is applied once.
 */
export function enqueueActions(queues: Queues, actionIds: string[], traces?: Traces): Promise<void> {
  return enqueue(
    queues,
    'loyalty-action-batch.apply',
    Array.from({ length: Math.ceil(actionIds.length / ACTION_BATCH) }, (_, i) => {
      const ids = actionIds.slice(i * ACTION_BATCH, (i + 1) * ACTION_BATCH);
      return { payload: { actionIds: ids, ...tracesOf(ids, traces) } };
    }),
  );
}

/** With tracing on: the `traceparent` of each id that has one (an action's, an event's), by id. */
export type Traces = ReadonlyMap<string, string>;

/** `traceparents` beside `ids` in a job's data, '' where an id has none; nothing when none has one. */
export function tracesOf(ids: readonly string[], traces: Traces | undefined): { traceparents?: string[] } {
  if (!traces || traces.size === 0 || !ids.some((id) => traces.has(id))) return {};
  return { traceparents: ids.map((id) => traces.get(id) ?? '') };
}

/** The actions of every `loyalty-action-batch.apply` job waiting or running: not lost, only not applied yet. */
export async function actionsInBatchJobs(queues: Queues): Promise<Set<string>> {
  const jobs = (
    await Promise.all(
      queues
        .shardsOf('loyalty-action-batch.apply')
        .map((q) => q.getJobs(['waiting', 'prioritized', 'active', 'delayed'])),
    )
  ).flat();
  const ids = new Set<string>();
  for (const job of jobs) {
    if (!job || currentJobName(job.name) !== 'loyalty-action-batch.apply') continue;
    for (const id of (job.data as JobPayload<'loyalty-action-batch.apply'>).actionIds ?? []) ids.add(id);
  }
  return ids;
}

/** One side of the queue wiring: a Redis connection and the queues on it. */
export type QueueSide = { redis: RedisClient; queues: Queues };

export type QueueConnections = {
  /** For the request path (API, relay checks): fails fast while Redis is away instead of holding a request. */
  producer: QueueSide;
  /** For workers: commands wait while Redis reconnects, as BullMQ requires. */
  consumer: QueueSide;
  /** Closes the queues and both connections. */
  close(): Promise<void>;
};

/** The producer's connection: a Redis that stops answering must not hold a request, its commands give up after 2 s. */
export const PRODUCER_REDIS: RedisOptions = {
  maxRetriesPerRequest: 1,
  enableOfflineQueue: false,
  commandTimeout: 2000,
};

/** The producer's on a Redis Cluster: whose master is failing over, it stops retrying after about a second. */
export const PRODUCER_CLUSTER: ClusterOptions = {
  maxRedirections: 6,
  retryDelayOnClusterDown: 150,
  retryDelayOnFailover: 150,
  retryDelayOnTryAgain: 150,
};

/**
 * Connects the two sides every process shape needs, waits until both are ready, and routes connection and
 * queue errors to `onError` (BullMQ prints them when nobody listens).
 */
export async function connectQueues(
  redis: RedisTarget | string,
  prefix: string,
  onError: (err: Error, side: 'producer' | 'consumer') => void,
  shards = 1,
): Promise<QueueConnections> {
  const side = async (
    name: 'producer' | 'consumer',
    opts: RedisOptions,
    clusterOpts: ClusterOptions = {},
  ): Promise<QueueSide> => {
    const connection = createRedis(redis, opts, clusterOpts);
    connection.on('error', (err) => onError(err, name));
    await redisReady(connection);
    return {
      redis: connection,
      queues: createQueues(connection, prefix, (err) => onError(err, name), shards),
    };
  };
  const [producer, consumer] = await Promise.all([
    side('producer', PRODUCER_REDIS, PRODUCER_CLUSTER),
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
