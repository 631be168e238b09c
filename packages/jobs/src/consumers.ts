import { safeError } from '@stampcard/config';
import { DelayedError, type Job, UnrecoverableError, Worker } from 'bullmq';
import {
  type Consumer,
  currentJobName,
  JOBS,
  type JobName,
  type JobNameOf,
  type JobPayload,
  type QueueName,
  queuesOf,
  shardNames,
} from './catalog';
import { queuePrefix, type RedisClient } from './redis';

/**
 * What runs a job: it receives the payload its name gives, already validated, the job and the lock token
 * (to move the job to delayed).
 */
export type Processor<N extends JobName> = (
  payload: JobPayload<N>,
  job: Job,
  token?: string,
) => Promise<unknown>;
/**
 * One processor for every job a process of kind `C` runs: a job added to the catalog for it without one does
 * not compile.
 */
export type Processors<C extends Consumer> = { [N in JobNameOf<C>]: Processor<N> };

/**
 * BullMQ keeps a failed job's message and stack in Redis and shows them on the dashboard. A database error's
 * message carries the query's parameters (participants' emails, names, metadata), so the job fails with its
 * class and code only; the full error goes to the log through its safe serializer.
 */
export function jobFailure(err: unknown): Error {
  const info = safeError(err);
  const causes: string[] = [];
  for (let at: Record<string, unknown> | undefined = info; at; at = at.cause as typeof info | undefined) {
    causes.push([at.type, at.code, at.constraint].filter(Boolean).join(' '));
  }
  return new Error(`job failed: ${causes.join(' <- ')}`, { cause: err });
}

/**
 * The BullMQ processor of a queue: finds the job's name in the catalog (an old name by its alias,
 * `JOB_ALIASES`) and its processor in the map, re-validates the payload (an unknown name or an invalid payload
 * will never succeed, so it is not retried), and fails with a log-safe error.
 */
export function dispatchByName<C extends Consumer>(processors: Processors<C>) {
  return async (job: Job, token?: string) => {
    const current = currentJobName(job.name);
    if (current === undefined || !Object.hasOwn(processors, current)) {
      throw new UnrecoverableError('Unknown job name: not in the job catalog for this process');
    }
    const name = current as JobNameOf<C>;
    const parsed = JOBS[name].payload.safeParse(job.data);
    if (!parsed.success) {
      const where = parsed.error.issues.map((i) => `${i.path.join('.') || '(payload)'} ${i.code}`).join(', ');
      throw new UnrecoverableError(`Invalid payload for ${name}: ${where}`);
    }
    const run = processors[name] as Processor<typeof name>;
    try {
      return await run(parsed.data as JobPayload<typeof name>, job, token);
    } catch (err) {
      // Moved to delayed on purpose (a retry, a throttle), or failed for good with a log-safe message: BullMQ
      // must see this very error.
      if (err instanceof DelayedError || err instanceof UnrecoverableError) throw err;
      throw jobFailure(err);
    }
  };
}

export type ConsumerOptions<C extends Consumer> = {
  consumer: C;
  processors: Processors<C>;
  connection: RedisClient;
  prefix: string;
  /** Jobs held at once, per queue. */
  concurrency: number;
  /**
   * `QUEUE_SHARDS`: the shards of each sharded queue, each taken by a BullMQ worker of its own, the queue's
   * concurrency shared between them.
   * @defaultValue 1
   */
  shards?: number;
  /**
   * Another concurrency for some queues.
   * @defaultValue none: every queue takes `concurrency`
   */
  queueConcurrency?: Partial<Record<QueueName, number>>;
  /** Job lock, in ms; stalled jobs are looked for every half of it. */
  lockMs: number;
  /**
   * Times a job may stall (its process died holding it) before it is failed.
   * @defaultValue 1, as BullMQ
   */
  maxStalledCount?: number;
  onFailed(job: Job | undefined, err: Error): void;
  onError(err: Error): void;
};

/**
 * The consumer of one queue (one shard of a sharded queue): its BullMQ worker, which `replace` swaps for a new
 * one, and what it holds, which a watchdog reads (`watchConsumers`).
 */
export type ConsumerSlot = {
  /** The queue's name (a shard's own name). */
  readonly queue: string;
  /** The BullMQ worker taking this queue's jobs now. */
  readonly worker: Worker;
  /** Jobs its processor is running now. */
  readonly holding: number;
  /** When it last started a job, or when its worker was made (ms since the epoch). */
  readonly lastTakenAt: number;
  /** Times its worker was replaced since it last started a job. */
  readonly replacements: number;
  /**
   * A new BullMQ worker for this queue, at once; the old one is closed in the background, at most
   * `closeTimeoutMs` waited for (see `closeConsumers`). Answers the new worker.
   */
  replace(closeTimeoutMs: number): Worker;
};

/** A process's consumers: one per queue (per shard of a sharded queue) that a process of its kind takes jobs from. */
export type Consumers = {
  readonly slots: readonly ConsumerSlot[];
  /** The BullMQ workers taking jobs now. */
  workers(): Worker[];
  /** True while every one of them takes jobs. */
  isRunning(): boolean;
  /** Closes them all (see `closeConsumers`). Answers the queues whose consumer had not closed in time. */
  close(timeoutMs: number): Promise<string[]>;
};

/** One BullMQ worker per queue (per shard of a sharded queue) that a process of kind `consumer` takes jobs from. */
export function startConsumers<C extends Consumer>(opts: ConsumerOptions<C>): Consumers {
  const dispatch = dispatchByName(opts.processors);
  const slots = queuesOf(opts.consumer).flatMap((queue) => {
    const shards = shardNames(queue, opts.shards ?? 1, opts.prefix);
    const concurrency = Math.max(
      1,
      Math.ceil((opts.queueConcurrency?.[queue] ?? opts.concurrency) / shards.length),
    );
    return shards.map((shard) => consumerSlot(shard, concurrency, dispatch, opts));
  });
  const workers = () => slots.map((s) => s.worker);
  return {
    slots,
    workers,
    isRunning: () => slots.every((s) => s.worker.isRunning()),
    close: (timeoutMs) => closeConsumers(workers(), timeoutMs),
  };
}

function consumerSlot<C extends Consumer>(
  shard: string,
  concurrency: number,
  dispatch: (job: Job, token?: string) => Promise<unknown>,
  opts: ConsumerOptions<C>,
): ConsumerSlot {
  let holding = 0;
  let lastTakenAt = Date.now();
  let replacements = 0;
  // Counted here rather than from BullMQ's events: a job moved to delayed ends without one.
  const processor = async (job: Job, token?: string) => {
    holding += 1;
    lastTakenAt = Date.now();
    replacements = 0;
    try {
      return await dispatch(job, token);
    } finally {
      holding -= 1;
    }
  };
  const make = () => {
    const worker = new Worker(shard, processor, {
      connection: opts.connection,
      prefix: queuePrefix(opts.prefix, shard, opts.connection),
      concurrency,
      lockDuration: opts.lockMs,
      stalledInterval: Math.ceil(opts.lockMs / 2),
      maxStalledCount: opts.maxStalledCount ?? 1,
    });
    worker.on('failed', opts.onFailed);
    worker.on('error', opts.onError);
    lastTakenAt = Date.now();
    return worker;
  };
  let worker = make();
  return {
    queue: shard,
    get worker() {
      return worker;
    },
    get holding() {
      return holding;
    },
    get lastTakenAt() {
      return lastTakenAt;
    },
    get replacements() {
      return replacements;
    },
    replace(closeTimeoutMs) {
      const old = worker;
      worker = make();
      replacements += 1;
      void closeConsumers([old], closeTimeoutMs);
      return worker;
    },
  };
}

/**
 * Closes a process's consumers: each waits for its running jobs, for `timeoutMs` at most. BullMQ's close also
 * waits for its blocking connection to end, which on a Redis Cluster whose client lost every node (a master
 * failed over under it) never comes; a job still running past the bound is left to another process once its
 * lock expires, as if this one had died. Answers the queues whose consumer had not closed in time.
 */
export async function closeConsumers(workers: readonly Worker[], timeoutMs: number): Promise<string[]> {
  const late: string[] = [];
  await Promise.all(
    workers.map(async (worker) => {
      let timer: NodeJS.Timeout | undefined;
      const closed = await Promise.race([
        worker.close().then(
          () => true,
          () => true,
        ),
        new Promise<false>((resolve) => {
          timer = setTimeout(() => resolve(false), timeoutMs);
        }),
      ]);
      clearTimeout(timer);
      if (!closed) late.push(worker.name);
    }),
  );
  return late;
}
