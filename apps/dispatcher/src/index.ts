import type { Env, Logger } from '@stampcard/config';
import type { Ctx } from '@stampcard/core';
import {
  type Consumers,
  type ConsumerWatchSettings,
  enqueueCommitted,
  type Processors,
  type Queues,
  type RedisClient,
  startConsumers,
  watchConsumers,
} from '@stampcard/jobs';
import type { DeliveryMetrics } from '@stampcard/telemetry';
import { claimLeaseMs, createDeliveryBatching } from './batching';
import { createSender } from './http';
import { runBacklog } from './processors/backlog';
import { deliverMessage } from './processors/deliver';
import { BATCH_LANE_MESSAGES, deliverMessages, laneWaitersMax } from './processors/deliver-batch';
import { fanOut } from './processors/fan-out';
import { createSweeper } from './sweeper';
import { createBatchLanes, createEndpointGate, createInFlight } from './throttle';

export { createSender, MAX_ANSWER_BYTES } from './http';
export { createEndpointGate } from './throttle';

export type DispatcherOptions = ConsumerWatchSettings & {
  /**
   * What the dispatcher's writes run with. Its `afterCommit` fans out at once the events its attempts record
   * (an endpoint disabled, a reward fulfilled).
   * @defaultValue `afterCommit`: `enqueueCommitted` on `queues`
   */
  ctx: Ctx;
  connection: RedisClient;
  queues: Queues;
  prefix: string;
  logger: Logger;
  /**
   * Delays before each retry, in ms.
   * @defaultValue `WEBHOOK_RETRY_SCHEDULE`'s (see `dispatcherSettings`)
   */
  retrySchedule: readonly number[];
  /**
   * Longest a delivery may take, in ms.
   * @defaultValue `WEBHOOK_TIMEOUT_MS`'s: 15000
   */
  timeoutMs: number;
  /**
   * An endpoint failing for this long is disabled, in ms.
   * @defaultValue `WEBHOOK_DISABLE_AFTER_MS`'s: 432000000 (5 days)
   */
  disableAfterMs: number;
  /**
   * The least a throttled answer (429/503 with Retry-After) holds its endpoint, in ms, however short the
   * Retry-After; it grows with the endpoint's run of throttles.
   * @defaultValue `WEBHOOK_THROTTLE_FLOOR_MS`'s: 1000
   */
  throttleFloorMs: number;
  /**
   * Throttled answers an endpoint may give since its last success before each further one counts as a failed
   * attempt.
   * @defaultValue `WEBHOOK_FREE_THROTTLES`'s: 10
   */
  freeThrottles: number;
  /**
   * Deliver to non-public addresses.
   * @defaultValue `WEBHOOK_ALLOW_PRIVATE_NETWORKS`'s: false
   */
  allowPrivateNetworks: boolean;
  /**
   * DNS servers for destination look-ups.
   * @defaultValue `WEBHOOK_DNS_SERVERS`'s: unset, the system's (from /etc/resolv.conf)
   */
  dnsServers?: readonly string[];
  /**
   * Longest one destination look-up may take, in ms.
   * @defaultValue `WEBHOOK_DNS_TIMEOUT_MS`'s: 5000
   */
  dnsTimeoutMs: number;
  /**
   * Deliveries in flight at once in this process.
   * @defaultValue `DISPATCHER_CONCURRENCY`'s: 64
   */
  concurrency: number;
  /**
   * The most deliveries in flight at once to one endpoint in this process; timeouts narrow it (see
   * `createInFlight`).
   * @defaultValue `WEBHOOK_ENDPOINT_CONCURRENCY`'s: 32
   */
  endpointConcurrency: number;
  /**
   * Pause between sweeps of the outbox, in ms.
   * @defaultValue `DISPATCH_SWEEP_MS`'s: 1000
   */
  sweepIntervalMs: number;
  /**
   * A PENDING message overdue by this much is checked for a live delivery job, in ms.
   * @defaultValue 30000
   */
  overdueGraceMs?: number;
  /**
   * Overdue messages are looked for on every n-th sweep (they are rare; the look costs Redis round trips).
   * @defaultValue 10
   */
  overdueEvery?: number;
  /**
   * Run the sweep's timer (tests call `sweeper.runOnce()` instead).
   * @defaultValue true
   */
  sweep?: boolean;
  /**
   * The most messages one batch of a backlog operation (release, discard, delete) handles.
   * @defaultValue `WEBHOOK_BACKLOG_BATCH`'s: 1000
   */
  backlogBatch: number;
  /**
   * Job lock, in ms: the jobs of a dispatcher that died are taken over within about 1.5 times this.
   * @defaultValue `WORKER_LOCK_MS`'s: 10000
   */
  lockMs: number;
  /**
   * What the dispatcher counts of its attempts, into its process's metrics.
   * @defaultValue none
   */
  metrics?: DeliveryMetrics;
};

/** The options the configuration sets, each from one variable (the one place its default is). */
export type DispatcherSettings = Pick<
  DispatcherOptions,
  | 'retrySchedule'
  | 'timeoutMs'
  | 'disableAfterMs'
  | 'throttleFloorMs'
  | 'freeThrottles'
  | 'allowPrivateNetworks'
  | 'dnsServers'
  | 'dnsTimeoutMs'
  | 'concurrency'
  | 'endpointConcurrency'
  | 'sweepIntervalMs'
  | 'backlogBatch'
  | 'lockMs'
>;

/** The dispatcher's settings from the configuration (`loadConfig`): the dispatcher takes what it is given. */
export function dispatcherSettings(config: Env): DispatcherSettings {
  return {
    retrySchedule: config.WEBHOOK_RETRY_SCHEDULE,
    timeoutMs: config.WEBHOOK_TIMEOUT_MS,
    disableAfterMs: config.WEBHOOK_DISABLE_AFTER_MS,
    throttleFloorMs: config.WEBHOOK_THROTTLE_FLOOR_MS,
    freeThrottles: config.WEBHOOK_FREE_THROTTLES,
    allowPrivateNetworks: config.WEBHOOK_ALLOW_PRIVATE_NETWORKS,
    dnsServers: config.WEBHOOK_DNS_SERVERS,
    dnsTimeoutMs: config.WEBHOOK_DNS_TIMEOUT_MS,
    concurrency: config.DISPATCHER_CONCURRENCY,
    endpointConcurrency: config.WEBHOOK_ENDPOINT_CONCURRENCY,
    sweepIntervalMs: config.DISPATCH_SWEEP_MS,
    backlogBatch: config.WEBHOOK_BACKLOG_BATCH,
    lockMs: config.WORKER_LOCK_MS,
  };
}

export type StampcardDispatcher = {
  /** One BullMQ worker per queue of the dispatcher's jobs in the catalog. */
  consumers: Consumers;
  /** Replaces a consumer that has stopped taking jobs while jobs wait; `runOnce()` answers the queues replaced. */
  watch: ReturnType<typeof watchConsumers>;
  /** True while every consumer takes jobs. */
  isRunning(): boolean;
  sweeper: ReturnType<typeof createSweeper>;
  /** Stops taking jobs, finishes the deliveries in hand, stops the sweep, closes connections to receivers. */
  close(): Promise<void>;
};

/**
 * The dispatcher process: fans committed events out to their endpoints and delivers each message, signed,
 * throttled, retried and recorded, with the sweep that makes sure nothing is left behind.
 */
export function startDispatcher(options: DispatcherOptions): StampcardDispatcher {
  const opts = {
    ...options,
    ctx: { afterCommit: enqueueCommitted(options.queues, options.logger), ...options.ctx },
  };
  const sender = createSender({
    timeoutMs: opts.timeoutMs,
    allowPrivateNetworks: opts.allowPrivateNetworks,
    dnsServers: opts.dnsServers,
    dnsTimeoutMs: opts.dnsTimeoutMs,
  });
  // Both delivery jobs share one endpoint gate and one set of per-endpoint windows.
  const deliver = {
    ctx: opts.ctx,
    queues: opts.queues,
    logger: opts.logger,
    sender,
    gate: createEndpointGate(opts.connection, opts.prefix),
    inFlight: createInFlight(opts.endpointConcurrency),
    lanes: createBatchLanes(BATCH_LANE_MESSAGES, { maxWaiting: laneWaitersMax(opts.concurrency) }),
    batching: createDeliveryBatching(opts.ctx, { leaseMs: claimLeaseMs(opts.timeoutMs) }),
    policy: {
      schedule: opts.retrySchedule,
      disableAfterMs: opts.disableAfterMs,
      throttle: { floorMs: opts.throttleFloorMs, freeThrottles: opts.freeThrottles },
    },
    metrics: opts.metrics,
  };
  opts.metrics?.watchLanes(deliver.lanes.waiting);
  const processors: Processors<'dispatcher'> = {
    'webhook-events.fan-out': fanOut(opts.ctx, opts.queues),
    'webhook-message.deliver': deliverMessage(deliver),
    'webhook-message-batch.deliver': deliverMessages(deliver),
    'webhook-backlog.run': runBacklog(opts.ctx, opts.queues, opts.logger, opts.backlogBatch),
  };
  const consumers = startConsumers({
    consumer: 'dispatcher',
    processors,
    connection: opts.connection,
    prefix: opts.prefix,
    concurrency: opts.concurrency,
    // Batches of one endpoint take its row lock in turn; two queues' worth keeps several endpoints moving.
    queueConcurrency: { 'webhook-events': 4, 'webhook-backlogs': 2 },
    lockMs: opts.lockMs,
    // A delivery cut off by a dying process is taken over again rather than failed: it is at-least-once.
    maxStalledCount: 5,
    onFailed: (job, err) =>
      opts.logger.error({ err, jobId: job?.id, job: job?.name, attempts: job?.attemptsMade }, 'job failed'),
    onError: (err) => opts.logger.error({ err }, 'dispatcher error'),
  });
  const watch = watchConsumers(consumers, opts);
  watch.start();
  const sweeper = createSweeper({
    ctx: opts.ctx,
    queues: opts.queues,
    logger: opts.logger,
    intervalMs: opts.sweepIntervalMs,
    overdueGraceMs: opts.overdueGraceMs ?? 30_000,
    overdueEvery: opts.overdueEvery ?? 10,
  });
  if (opts.sweep !== false) sweeper.start();
  return {
    consumers,
    watch,
    isRunning: consumers.isRunning,
    sweeper,
    close: async () => {
      await Promise.all([sweeper.stop(), watch.stop()]);
      const late = await consumers.close(opts.lockMs);
      if (late.length > 0)
        opts.logger.warn({ queues: late }, 'queue consumers not closed in time; left to exit');
      await sender.close();
    },
  };
}
