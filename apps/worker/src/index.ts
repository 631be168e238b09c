import type { Logger } from '@stampcard/config';
import { applyActions, type Ctx } from '@stampcard/core';
import { QUEUE_NAMES, type Queues } from '@stampcard/jobs';
import { Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { ActionBatcher } from './batcher';
import { applyLoyaltyAction } from './processors/apply-loyalty-action';
import { dispatchByName, type Processors } from './processors/index';
import { createRelay } from './relay';

export { ActionBatcher } from './batcher';
export { dispatchByName, jobFailure, type Processor, type Processors } from './processors/index';
export { createRelay } from './relay';

export type WorkerOptions = {
  ctx: Ctx;
  connection: Redis;
  queues: Queues;
  prefix: string;
  logger: Logger;
  /**
   * Jobs held at once, and so the largest batch.
   * @defaultValue 64
   */
  concurrency?: number;
  /**
   * Longest wait to fill a batch, in ms.
   * @defaultValue 2
   */
  batchWaitMs?: number;
  /**
   * Pause between relay sweeps, in ms.
   * @defaultValue 5000
   */
  relayIntervalMs?: number;
  /**
   * An accepted action younger than this is left to the API's own enqueue, in ms.
   * @defaultValue 10000
   */
  relayGraceMs?: number;
  /**
   * Start the relay timer.
   * @defaultValue true
   */
  relay?: boolean;
  /**
   * Job lock, in ms. A live worker renews it every half of this; the jobs of a worker that died (`kill -9`)
   * are found by another worker's stalled-job check, which runs every half of this too, so they are
   * applied again within about 1.5 times this. BullMQ's own default (30 s lock, 30 s checks) left them for
   * up to a minute.
   * @defaultValue 10000
   */
  lockMs?: number;
};

export type StampcardWorker = {
  /** One BullMQ worker per queue of the job catalog. */
  workers: Worker[];
  /** True while every one of them takes jobs. */
  isRunning(): boolean;
  relay: ReturnType<typeof createRelay>;
  /** Stops taking jobs, finishes the ones in hand, stops the relay. */
  close(): Promise<void>;
};

export function startWorker(opts: WorkerOptions): StampcardWorker {
  const concurrency = opts.concurrency ?? 64;
  const batcher = new ActionBatcher({
    apply: (ids) => applyActions(opts.ctx, ids),
    maxSize: concurrency,
    maxWaitMs: opts.batchWaitMs ?? 2,
    onBatchError: (err, size) =>
      opts.logger.warn({ err, size }, 'batch failed; applying its actions one by one'),
  });
  // The worker is built from the map: a job added to the catalog without a processor does not compile.
  const processors: Processors = { 'loyalty-action.apply': applyLoyaltyAction(batcher) };
  const workers = QUEUE_NAMES.map((queue) => {
    const worker = new Worker(queue, dispatchByName(processors), {
      connection: opts.connection,
      prefix: opts.prefix,
      concurrency,
      lockDuration: opts.lockMs ?? 10_000,
      stalledInterval: Math.ceil((opts.lockMs ?? 10_000) / 2),
    });
    worker.on('failed', (job, err) =>
      opts.logger.error({ err, jobId: job?.id, job: job?.name, attempts: job?.attemptsMade }, 'job failed'),
    );
    worker.on('error', (err) => opts.logger.error({ err }, 'worker error'));
    return worker;
  });
  const relay = createRelay({
    ctx: opts.ctx,
    queues: opts.queues,
    logger: opts.logger,
    graceMs: opts.relayGraceMs ?? 10_000,
    intervalMs: opts.relayIntervalMs ?? 5000,
  });
  if (opts.relay !== false) relay.start();
  return {
    workers,
    isRunning: () => workers.every((w) => w.isRunning()),
    relay,
    close: async () => {
      await relay.stop();
      await Promise.all(workers.map((w) => w.close()));
      await batcher.drain();
    },
  };
}
