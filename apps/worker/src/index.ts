import type { Logger } from '@stampcard/config';
import { applyActions, type Ctx } from '@stampcard/core';
import {
  appliedChannel,
  enqueueCommitted,
  type Processors,
  type Queues,
  startConsumers,
} from '@stampcard/jobs';
import type { Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { createActionBatcher } from './batcher';
import { createIdempotencyPurge } from './idempotency-purge';
import { applyLoyaltyAction } from './processors/apply-loyalty-action';
import { applyLoyaltyActions } from './processors/apply-loyalty-actions';
import { runErasure } from './processors/run-erasure';
import { createRelay } from './relay';

export { type ActionBatcher, createActionBatcher } from './batcher';
export { createIdempotencyPurge } from './idempotency-purge';
export { applyLoyaltyAction } from './processors/apply-loyalty-action';
export { applyLoyaltyActions } from './processors/apply-loyalty-actions';
export { runErasure } from './processors/run-erasure';
export { createRelay } from './relay';

export type WorkerOptions = {
  /**
   * What the worker's writes run with. Its `afterCommit` hands the events of each committed batch to the
   * dispatcher.
   * @defaultValue `afterCommit`: `enqueueCommitted` on `queues`
   */
  ctx: Ctx;
  connection: Redis;
  queues: Queues;
  prefix: string;
  logger: Logger;
  /**
   * Jobs held at once: more than a batch, so that jobs keep arriving while batches commit.
   * @defaultValue 256
   */
  concurrency?: number;
  /**
   * Most actions applied in one transaction.
   * @defaultValue 64
   */
  batchSize?: number;
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
   * Start the relay timer, and the purge of expired `Idempotency-Key` answers with it.
   * @defaultValue true
   */
  relay?: boolean;
  /**
   * Pause between purges of expired `Idempotency-Key` answers, in ms (each deletes every expired row, in
   * batches of 1000).
   * @defaultValue 60000
   */
  idempotencyPurgeIntervalMs?: number;
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
  /** One BullMQ worker per queue of the worker's jobs in the catalog. */
  workers: Worker[];
  /** True while every one of them takes jobs. */
  isRunning(): boolean;
  relay: ReturnType<typeof createRelay>;
  /** Deletes expired `Idempotency-Key` answers; `runOnce()` answers how many, in how many batches. */
  idempotencyPurge: ReturnType<typeof createIdempotencyPurge>;
  /** Stops taking jobs, finishes the ones in hand, stops the relay and the purge. */
  close(): Promise<void>;
};

export function startWorker(options: WorkerOptions): StampcardWorker {
  // Every committed write hands its events on (the batch's, an erasure's): see `Ctx.afterCommit`.
  const opts = {
    ...options,
    ctx: { afterCommit: enqueueCommitted(options.queues, options.logger), ...options.ctx },
  };
  const concurrency = opts.concurrency ?? 256;
  const batcher = createActionBatcher({
    apply: async (ids) => {
      // Once the batch committed, its events went to the dispatcher (the ctx's `afterCommit`).
      const applied = await applyActions(opts.ctx, ids);
      // Wake the `?wait=true` requests of this batch (they read the ledger again at least every second anyway).
      if (applied.length > 0) {
        await opts.connection
          .publish(appliedChannel(opts.prefix), applied.map((a) => a.id).join(','))
          .catch((err) => opts.logger.warn({ err }, 'applied actions not announced'));
      }
      return applied;
    },
    maxSize: Math.min(opts.batchSize ?? 64, concurrency),
    maxWaitMs: opts.batchWaitMs ?? 2,
    onBatchError: (err, size) =>
      opts.logger.warn({ err, size }, 'batch failed; applying its actions one by one'),
  });
  // The worker is built from the map: a worker job added to the catalog without a processor does not compile.
  const processors: Processors<'worker'> = {
    'loyalty-action.apply': applyLoyaltyAction(batcher),
    'loyalty-action-batch.apply': applyLoyaltyActions(batcher),
    'participant-erasure.run': runErasure(opts.ctx, opts.logger),
  };
  const workers = startConsumers({
    consumer: 'worker',
    processors,
    connection: opts.connection,
    prefix: opts.prefix,
    concurrency,
    // A job of the batch queue holds up to 64 actions: a quarter as many jobs hold as many actions and more.
    // Erasures: one batch at a time per worker, so a deletion spree never takes the pool from actions.
    queueConcurrency: {
      'loyalty-action-batches': Math.max(1, Math.ceil(concurrency / 4)),
      'participant-erasures': 1,
    },
    lockMs: opts.lockMs ?? 10_000,
    onFailed: (job, err) =>
      opts.logger.error({ err, jobId: job?.id, job: job?.name, attempts: job?.attemptsMade }, 'job failed'),
    onError: (err) => opts.logger.error({ err }, 'worker error'),
  });
  const relay = createRelay({
    ctx: opts.ctx,
    queues: opts.queues,
    logger: opts.logger,
    graceMs: opts.relayGraceMs ?? 10_000,
    intervalMs: opts.relayIntervalMs ?? 5000,
  });
  const idempotencyPurge = createIdempotencyPurge({
    ctx: opts.ctx,
    logger: opts.logger,
    intervalMs: opts.idempotencyPurgeIntervalMs ?? 60_000,
  });
  if (opts.relay !== false) {
    relay.start();
    idempotencyPurge.start();
  }
  return {
    workers,
    isRunning: () => workers.every((w) => w.isRunning()),
    relay,
    idempotencyPurge,
    close: async () => {
      await Promise.all([relay.stop(), idempotencyPurge.stop()]);
      await Promise.all(workers.map((w) => w.close()));
      await batcher.drain();
    },
  };
}
