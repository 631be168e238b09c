import type { Logger } from '@stampcard/config';
import { applyActions, type Ctx } from '@stampcard/core';
import { jobs, type Queues } from '@stampcard/jobs';
import { Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { ActionBatcher } from './batcher';
import { applyLoyaltyActionProcessor } from './processors/apply-loyalty-action';
import { createRelay } from './relay';

export { ActionBatcher } from './batcher';
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
  worker: Worker;
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
  const worker = new Worker(jobs.applyLoyaltyAction.queue, applyLoyaltyActionProcessor(batcher), {
    connection: opts.connection,
    prefix: opts.prefix,
    concurrency,
    lockDuration: opts.lockMs ?? 10_000,
    stalledInterval: Math.ceil((opts.lockMs ?? 10_000) / 2),
  });
  worker.on('failed', (job, err) =>
    opts.logger.error({ err, jobId: job?.id, attempts: job?.attemptsMade }, 'job failed'),
  );
  worker.on('error', (err) => opts.logger.error({ err }, 'worker error'));
  const relay = createRelay({
    ctx: opts.ctx,
    queues: opts.queues,
    logger: opts.logger,
    graceMs: opts.relayGraceMs ?? 10_000,
    intervalMs: opts.relayIntervalMs ?? 5000,
  });
  if (opts.relay !== false) relay.start();
  return {
    worker,
    relay,
    close: async () => {
      await relay.stop();
      await worker.close();
      await batcher.drain();
    },
  };
}
