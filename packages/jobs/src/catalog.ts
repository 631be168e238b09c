import type { JobsOptions } from 'bullmq';
import keySlot from 'cluster-key-slot';
import { z } from 'zod';

/** Which process runs a job: the worker applies actions, the dispatcher fans events out and delivers them. */
export type Consumer = 'worker' | 'dispatcher';
type JobDefinition = {
  queue: string;
  consumer: Consumer;
  payload: z.ZodType;
  options: JobsOptions;
  /**
   * Its queue is split in `QUEUE_SHARDS` queues (`<queue>`, `<queue>-1`, …), each a slot of its own on a Redis
   * Cluster, and producers spread its jobs over them (see `shardNames`). Only for jobs added without an id: a
   * job with one must be found again by it, in one queue.
   */
  sharded?: true;
};

/**
 * The job catalog, shared by producers (API, relay) and consumers (worker): each job's name, keyed as BullMQ
 * names it (`entity.verb`), gives its queue, its payload schema and its retry policy. `JobPayload<N>` is the
 * payload type of job `N`, so a producer cannot enqueue, nor a processor receive, the wrong shape.
 */
/** A W3C Trace Context `traceparent` carried in a job's data (tracing on): at most its 55 characters and some. */
const TRACEPARENT = z.string().max(64);

export const JOBS = {
  'loyalty-action.apply': {
    queue: 'loyalty-actions',
    consumer: 'worker',
    payload: z.strictObject({ actionId: z.string().startsWith('act_') }),
    options: {
      attempts: 8,
      backoff: { type: 'exponential', delay: 500 },
      removeOnComplete: { age: 3600, count: 10_000 },
      removeOnFail: { age: 7 * 24 * 3600 },
    },
  },
  /**
   * Actions accepted together (one group commit of the API, or one call of `enqueueActions`), up to 64: the
   * worker's batches take them as if each were its own job, and the queue handles one job instead of many.
   * The relay re-queues a lost action as its own `loyalty-action.apply` job.
   */
  'loyalty-action-batch.apply': {
    queue: 'loyalty-action-batches',
    consumer: 'worker',
    // Every accepted action goes through it: the hot queue, spread over the shards.
    sharded: true,
    payload: z.strictObject({
      actionIds: z.array(z.string().startsWith('act_')).min(1).max(64),
      /** With tracing on: each action's W3C `traceparent` (its request's span), '' for none; see `Traced`. */
      traceparents: z.array(TRACEPARENT).max(64).optional(),
    }),
    options: {
      attempts: 8,
      backoff: { type: 'exponential', delay: 500 },
      removeOnComplete: { age: 3600, count: 1000 },
      removeOnFail: { age: 7 * 24 * 3600 },
    },
  },
  /**
   * One batch of a deleted participant's erasure (job id `erasure-<participantId>-<batch>`, see
   * `erasureJobId`): one short transaction, then the job of the next batch. Its state is in the `erasures`
   * row, so a job run twice does nothing the second time, and the relay's sweep re-adds a lost one.
   */
  'participant-erasure.run': {
    queue: 'participant-erasures',
    consumer: 'worker',
    payload: z.strictObject({ participantId: z.string().min(1).max(64), batch: z.number().int().min(0) }),
    options: {
      attempts: 8,
      backoff: { type: 'exponential', delay: 1000 },
      removeOnComplete: { age: 3600, count: 1000 },
      removeOnFail: { age: 7 * 24 * 3600 },
    },
  },
  /**
   * One batch of a participant import (job id `import-<importId>-<batch>`, see `importJobId`): batch 0 counts
   * the file's rows, each next one imports up to 500 of them in one transaction, then the job of the next batch
   * is queued. Its state is in the `participant_imports` row, so a job run twice does nothing the second time,
   * and the relay's sweep re-adds a lost one.
   */
  'participant-import.run': {
    queue: 'participant-imports',
    consumer: 'worker',
    payload: z.strictObject({
      importId: z.string().startsWith('imp_').max(64),
      batch: z.number().int().min(0),
    }),
    options: {
      attempts: 8,
      backoff: { type: 'exponential', delay: 1000 },
      removeOnComplete: { age: 3600, count: 1000 },
      removeOnFail: { age: 7 * 24 * 3600 },
    },
  },
  /** Outbox events a worker just committed, to fan out to their endpoints (a sweep catches any this misses). */
  'webhook-events.fan-out': {
    queue: 'webhook-events',
    consumer: 'dispatcher',
    payload: z.strictObject({
      eventIds: z.array(z.string().startsWith('evt_')).min(1).max(5000),
      /** With tracing on: each event's `traceparent` (its action's span), '' for none. */
      traceparents: z.array(TRACEPARENT).max(5000).optional(),
    }),
    options: {
      attempts: 5,
      backoff: { type: 'exponential', delay: 1000 },
      removeOnComplete: { age: 3600, count: 1000 },
      removeOnFail: { age: 7 * 24 * 3600 },
    },
  },
  /**
   * The delivery of a webhook message (job id `<messageId>-<generation>`, see `deliveryJobId`). The message's
   * retry schedule lives in PostgreSQL: a failed attempt is not a failed job, it is the same job delayed to
   * the next attempt. The job's own retries only cover the dispatcher's stores failing.
   */
  'webhook-message.deliver': {
    queue: 'webhook-deliveries',
    consumer: 'dispatcher',
    payload: z.strictObject({
      messageId: z.string().startsWith('msg_'),
      generation: z.number().int().min(0),
      /** With tracing on: the `traceparent` of its event's fan-out. */
      traceparent: TRACEPARENT.optional(),
    }),
    options: {
      attempts: 10,
      backoff: { type: 'exponential', delay: 1000 },
      removeOnComplete: { age: 3600, count: 10_000 },
      removeOnFail: { age: 7 * 24 * 3600 },
    },
  },
  /**
   * The first attempt of up to 64 new messages of one endpoint (a fan-out's, or a replay's), made together:
   * one job, one read and one write for all of them. A message that cannot be sent now (its endpoint busy or
   * throttled) or whose attempt failed goes on as its own `webhook-message.deliver` job.
   */
  'webhook-message-batch.deliver': {
    queue: 'webhook-deliveries',
    consumer: 'dispatcher',
    payload: z.strictObject({
      endpointId: z.string().startsWith('ep_'),
      messages: z
        .array(
          z.strictObject({
            messageId: z.string().startsWith('msg_'),
            generation: z.number().int().min(0),
            traceparent: TRACEPARENT.optional(),
          }),
        )
        .min(1)
        .max(64),
    }),
    options: {
      attempts: 10,
      backoff: { type: 'exponential', delay: 1000 },
      removeOnComplete: { age: 3600, count: 1000 },
      removeOnFail: { age: 7 * 24 * 3600 },
    },
  },
  /**
   * The next batch of an endpoint's backlog operation (release, discard or delete of its messages; see
   * `backlogBatch` in core), job id `backlog-<endpointId>-<operation>-<batch>` (`backlogJobId`). Each job runs one
   * bounded batch and queues the next, so a backlog of a million messages is a chain of small jobs; the state
   * is in PostgreSQL, and a job run twice, or one of an operation superseded since, does nothing.
   */
  'webhook-backlog.run': {
    queue: 'webhook-backlogs',
    consumer: 'dispatcher',
    payload: z.strictObject({
      endpointId: z.string().startsWith('ep_'),
      operation: z.number().int().min(1),
      batch: z.number().int().min(0),
    }),
    options: {
      attempts: 10,
      backoff: { type: 'exponential', delay: 1000 },
      removeOnComplete: { age: 3600, count: 1000 },
      removeOnFail: { age: 7 * 24 * 3600 },
    },
  },
} as const satisfies Record<string, JobDefinition>;

export type JobName = keyof typeof JOBS;
export type JobPayload<N extends JobName> = z.infer<(typeof JOBS)[N]['payload']>;
export type QueueName = (typeof JOBS)[JobName]['queue'];

/** Every queue a job of the catalog runs on, once. */
export const QUEUE_NAMES = [...new Set(Object.values(JOBS).map((j) => j.queue))] as QueueName[];

/** The jobs a process of kind `C` runs. */
export type JobNameOf<C extends Consumer> = {
  [N in JobName]: (typeof JOBS)[N]['consumer'] extends C ? N : never;
}[JobName];

/** The queues a process of kind `consumer` takes jobs from. */
export function queuesOf(consumer: Consumer): QueueName[] {
  return [
    ...new Set(
      Object.values(JOBS)
        .filter((j) => j.consumer === consumer)
        .map((j) => j.queue),
    ),
  ];
}

/** The most shards a sharded queue is split in (`QUEUE_SHARDS`). */
export const MAX_QUEUE_SHARDS = 16;

/** Redis Cluster's hash slots. */
const CLUSTER_SLOTS = 16384;

/** The hash tag of `queue`'s keys on a Redis Cluster (see `queuePrefix`): the prefix and the queue. */
export function clusterTag(prefix: string, queue: string): string {
  return `{${prefix}:${queue}}`;
}

/**
 * The BullMQ queues a catalog queue is made of: itself, and with `shards` > 1 for a queue of sharded jobs, as
 * many more (`<queue>-1`, …). The first keeps the queue's own name, so one shard is the layout of a service
 * without shards. The others' names are picked so that the N shards' slots lie in N different Nths of the
 * cluster's 16,384 slots (`<queue>-<i>`, or `<queue>-<i>-<k>` for the first k that lands in its Nth): a cluster
 * made by `redis-cli --cluster create` gives each master an equal run of slots, so N shards on N masters are one
 * per master, not where the hash happens to put them. The same `prefix` and `shards` give the same names on every
 * process.
 */
export function shardNames(queue: QueueName, shards: number, prefix: string): string[] {
  const sharded = Object.values(JOBS).some((j) => j.queue === queue && 'sharded' in j && j.sharded);
  const n = sharded ? Math.min(Math.max(1, Math.floor(shards)), MAX_QUEUE_SHARDS) : 1;
  if (n === 1) return [queue];
  const nth = (name: string) => Math.floor((keySlot(clusterTag(prefix, name)) * n) / CLUSTER_SLOTS);
  const first = nth(queue);
  const names: string[] = [queue];
  for (let i = 1; i < n; i++) {
    const want = (first + i) % n;
    // Each try lands in the wanted Nth with odds 1/n: past a few hundred tries, never in practice.
    for (let k = 0; ; k++) {
      const name = k === 0 ? `${queue}-${i}` : `${queue}-${i}-${k}`;
      if (nth(name) === want) {
        names.push(name);
        break;
      }
    }
  }
  return names;
}

/** Whether `name` (a string from Redis) is a job of the catalog; the catalog is never indexed otherwise. */
export function isJobName(name: string): name is JobName {
  return Object.hasOwn(JOBS, name);
}

/**
 * Names that jobs of the catalog had in earlier versions, and the name each has now. A job still waiting in
 * Redis under an old name when the service is upgraded runs as the job it became (same queue, same payload),
 * and the relay and the sweep count it as the new one; producers use only the new names. An alias may go once
 * no queue holds a job of its old name (a release later is plenty: these jobs live seconds).
 */
export const JOB_ALIASES = {
  'loyalty-actions.apply': 'loyalty-action-batch.apply',
  'webhook-messages.deliver': 'webhook-message-batch.deliver',
} as const satisfies Record<string, JobName>;

/** The catalog's name of a job from Redis, under its current name or an old one; undefined when unknown. */
export function currentJobName(name: string): JobName | undefined {
  if (isJobName(name)) return name;
  return Object.hasOwn(JOB_ALIASES, name) ? JOB_ALIASES[name as keyof typeof JOB_ALIASES] : undefined;
}
