import type { Logger } from '@stampcard/config';
import { type AppliedAction, applyActions, type Created, type Ctx } from '@stampcard/core';
import { DEFAULT_RETENTION, type RetentionPolicy } from '@stampcard/db';
import {
  appliedChannel,
  type Consumers,
  type ConsumerWatchSettings,
  enqueueCommitted,
  type Processors,
  type Queues,
  type RedisClient,
  startConsumers,
  watchConsumers,
} from '@stampcard/jobs';
import type { ApplyMetrics } from '@stampcard/telemetry';
import type postgres from 'postgres';
import { actionTraces, createActionBatcher } from './batcher';
import { createPartitionMaintenance } from './partition-maintenance';
import { applyLoyaltyAction } from './processors/apply-loyalty-action';
import { applyLoyaltyActions } from './processors/apply-loyalty-actions';
import { runErasure } from './processors/run-erasure';
import { runImport } from './processors/run-import';
import { createRelay } from './relay';

export { type ActionBatcher, createActionBatcher } from './batcher';
export { createPartitionMaintenance } from './partition-maintenance';
export { applyLoyaltyAction } from './processors/apply-loyalty-action';
export { applyLoyaltyActions } from './processors/apply-loyalty-actions';
export { runErasure } from './processors/run-erasure';
export { runImport } from './processors/run-import';
export { createRelay } from './relay';

export type WorkerOptions = ConsumerWatchSettings & {
  /**
   * What the worker's writes run with. Its `afterCommit` hands the events of each committed batch to the
   * dispatcher.
   * @defaultValue `afterCommit`: `enqueueCommitted` on `queues`
   */
  ctx: Ctx;
  /** The driver behind `ctx.db`: partition maintenance takes a connection of its own from it. */
  sql: postgres.Sql;
  connection: RedisClient;
  queues: Queues;
  prefix: string;
  /**
   * `QUEUE_SHARDS`: the shards of the sharded queues (`loyalty-action-batches`), each taken by a BullMQ worker of
   * its own. Every process of a deployment must have the same.
   * @defaultValue 1
   */
  queueShards?: number;
  logger: Logger;
  /**
   * Jobs held at once: more than a batch, so that jobs keep arriving while batches commit.
   * @defaultValue 256
   */
  concurrency?: number;
  /**
   * Most actions applied in one transaction.
   * @defaultValue 128
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
   * Start the relay timer, and with it the partition maintenance.
   * @defaultValue true
   */
  relay?: boolean;
  /**
   * How long each kind of row is kept, in ms: events and their messages, delivery attempts, the audit log
   * (`EVENT_RETENTION_DAYS`, `ATTEMPT_RETENTION_DAYS`, `AUDIT_RETENTION_DAYS`), `Idempotency-Key` answers
   * (their 24 h). A partition all of which is older is dropped by the partition maintenance, which runs with
   * the relay.
   * @defaultValue 90, 30 and 365 days; 24 h
   */
  retention?: RetentionPolicy;
  /**
   * Pause between partition maintenance runs, in ms.
   * @defaultValue 3600000
   */
  partitionMaintenanceIntervalMs?: number;
  /**
   * Job lock, in ms. A live worker renews it every half of this; the jobs of a worker that died (`kill -9`)
   * are found by another worker's stalled-job check, which runs every half of this too, so they are
   * applied again within about 1.5 times this. BullMQ's own default (30 s lock, 30 s checks) left them for
   * up to a minute.
   * @defaultValue 10000
   */
  lockMs?: number;
  /**
   * What the worker counts of the actions it applies, into its process's metrics.
   * @defaultValue none
   */
  metrics?: ApplyMetrics;
};

export type StampcardWorker = {
  /** One BullMQ worker per queue (per shard) of the worker's jobs in the catalog. */
  consumers: Consumers;
  /** Replaces a consumer that has stopped taking jobs while jobs wait; `runOnce()` answers the queues replaced. */
  watch: ReturnType<typeof watchConsumers>;
  /** True while every consumer takes jobs. */
  isRunning(): boolean;
  relay: ReturnType<typeof createRelay>;
  /** Deletes expired `Idempotency-Key` answers; `runOnce()` answers how many, in how many batches. */
  /** Makes partitions ahead and drops those past retention; `runOnce()` answers what it did (null: another worker's turn). */
  partitionMaintenance: ReturnType<typeof createPartitionMaintenance>;
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
  const traces = actionTraces();
  // Counted, then the `?wait=true` requests of the batch woken (they read the ledger again every second anyway).
  const announce = async (applied: AppliedAction[]) => {
    opts.metrics?.applied(applied, opts.ctx.clock.now());
    if (applied.length === 0) return;
    await opts.connection
      .publish(appliedChannel(opts.prefix), applied.map((a) => a.id).join(','))
      .catch((err) => opts.logger.warn({ err }, 'applied actions not announced'));
  };
  const handOffTraced = enqueueCommitted(options.queues, options.logger);
  const batcher = createActionBatcher({
    apply: async (ids) => {
      // Once the batch committed, its events go to the dispatcher: through the ctx's `afterCommit`, or, when an
      // action of the batch is traced, here, each event with its action's `traceparent`.
      if (!ids.some((id) => traces.get(id))) {
        const applied = await applyActions(opts.ctx, ids);
        await announce(applied);
        return applied;
      }
      const created: Created[] = [];
      const applied = await applyActions(
        { ...opts.ctx, afterCommit: async (c) => void created.push(c) },
        ids,
      );
      const events = new Map<string, string>();
      for (const a of applied) {
        const traceparent = traces.get(a.id);
        if (traceparent) for (const id of a.eventIds ?? []) events.set(id, traceparent);
      }
      for (const c of created) await handOffTraced(c, events);
      await announce(applied);
      return applied;
    },

    maxSize: Math.min(opts.batchSize ?? 128, concurrency),
    maxWaitMs: opts.batchWaitMs ?? 2,
    onBatchError: (err, size) =>
      opts.logger.warn({ err, size }, 'batch failed; applying its actions one by one'),
  });
  // The worker is built from the map: a worker job added to the catalog without a processor does not compile.
  const processors: Processors<'worker'> = {
    'loyalty-action.apply': applyLoyaltyAction(batcher),
    'loyalty-action-batch.apply': applyLoyaltyActions(batcher, traces),
    'participant-erasure.run': runErasure(opts.ctx, opts.logger),
    'participant-import.run': runImport(opts.ctx, opts.logger),
  };
  const consumers = startConsumers({
    consumer: 'worker',
    processors,
    connection: opts.connection,
    prefix: opts.prefix,
    shards: opts.queueShards,
    concurrency,
    // A job of the batch queue holds up to 64 actions: a quarter as many jobs hold as many actions and more.
    // Erasures and imports: one batch at a time per worker, so a deletion spree or a big import never takes
    // the pool from actions.
    queueConcurrency: {
      'loyalty-action-batches': Math.max(1, Math.ceil(concurrency / 4)),
      'participant-erasures': 1,
      'participant-imports': 1,
    },
    lockMs: opts.lockMs ?? 10_000,
    onFailed: (job, err) =>
      opts.logger.error({ err, jobId: job?.id, job: job?.name, attempts: job?.attemptsMade }, 'job failed'),
    onError: (err) => opts.logger.error({ err }, 'worker error'),
  });
  const watch = watchConsumers(consumers, opts);
  watch.start();
  const relay = createRelay({
    ctx: opts.ctx,
    queues: opts.queues,
    logger: opts.logger,
    graceMs: opts.relayGraceMs ?? 10_000,
    intervalMs: opts.relayIntervalMs ?? 5000,
  });
  const partitionMaintenance = createPartitionMaintenance({
    ctx: opts.ctx,
    sql: opts.sql,
    logger: opts.logger,
    policy: opts.retention ?? DEFAULT_RETENTION,
    intervalMs: opts.partitionMaintenanceIntervalMs ?? 3_600_000,
  });
  if (opts.relay !== false) {
    relay.start();
    partitionMaintenance.start();
  }
  return {
    consumers,
    watch,
    isRunning: consumers.isRunning,
    relay,
    partitionMaintenance,
    close: async () => {
      await Promise.all([relay.stop(), partitionMaintenance.stop(), watch.stop()]);
      const late = await consumers.close(opts.lockMs ?? 10_000);
      if (late.length > 0)
        opts.logger.warn({ queues: late }, 'queue consumers not closed in time; left to exit');
      await batcher.drain();
    },
  };
}
