import type { Logger } from '@stampcard/config';
import { type Ctx, DEFAULT_BACKLOG_BATCH } from '@stampcard/core';
import { enqueueCommitted, type Processors, type Queues, startConsumers } from '@stampcard/jobs';
import type { Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { createDeliveryBatching } from './batching';
import { createSender } from './http';
import { runBacklog } from './processors/backlog';
import { deliverMessage } from './processors/deliver';
import { deliverMessages } from './processors/deliver-batch';
import { fanOut } from './processors/fan-out';
import { createSweeper } from './sweeper';
import { createEndpointGate, createInFlight } from './throttle';

export { createSender, MAX_ANSWER_BYTES } from './http';
export { createEndpointGate } from './throttle';

export type DispatcherOptions = {
  /**
   * What the dispatcher's writes run with. Its `afterCommit` fans out at once the events its attempts record
   * (an endpoint disabled, a reward fulfilled).
   * @defaultValue `afterCommit`: `enqueueCommitted` on `queues`
   */
  ctx: Ctx;
  connection: Redis;
  queues: Queues;
  prefix: string;
  logger: Logger;
  /** Delays before each retry, in ms (`WEBHOOK_RETRY_SCHEDULE`). */
  retrySchedule: readonly number[];
  /**
   * Longest a delivery may take, in ms (`WEBHOOK_TIMEOUT_MS`).
   * @defaultValue 15000
   */
  timeoutMs?: number;
  /**
   * An endpoint failing for this long is disabled, in ms (`WEBHOOK_DISABLE_AFTER_MS`).
   * @defaultValue 432000000 (5 days)
   */
  disableAfterMs?: number;
  /**
   * The least a throttled answer (429/503 with Retry-After) holds its endpoint, in ms, however short the
   * Retry-After; it grows with the endpoint's run of throttles (`WEBHOOK_THROTTLE_FLOOR_MS`).
   * @defaultValue 1000
   */
  throttleFloorMs?: number;
  /**
   * Throttled answers an endpoint may give since its last success before each further one counts as a failed
   * attempt (`WEBHOOK_FREE_THROTTLES`).
   * @defaultValue 10
   */
  freeThrottles?: number;
  /**
   * Deliver to non-public addresses (`WEBHOOK_ALLOW_PRIVATE_NETWORKS`).
   * @defaultValue false
   */
  allowPrivateNetworks?: boolean;
  /**
   * DNS servers for destination look-ups (`WEBHOOK_DNS_SERVERS`).
   * @defaultValue the system's, from /etc/resolv.conf
   */
  dnsServers?: readonly string[];
  /**
   * Longest one destination look-up may take, in ms (`WEBHOOK_DNS_TIMEOUT_MS`).
   * @defaultValue 5000
   */
  dnsTimeoutMs?: number;
  /**
   * Deliveries in flight at once in this process (`DISPATCHER_CONCURRENCY`).
   * @defaultValue 64
   */
  concurrency?: number;
  /**
   * The most deliveries in flight at once to one endpoint in this process (`WEBHOOK_ENDPOINT_CONCURRENCY`);
   * timeouts narrow it (see `createInFlight`).
   * @defaultValue 32
   */
  endpointConcurrency?: number;
  /**
   * Pause between sweeps of the outbox, in ms (`DISPATCH_SWEEP_MS`).
   * @defaultValue 1000
   */
  sweepIntervalMs?: number;
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
   * The most messages one batch of a backlog operation (release, discard, delete) handles
   * (`WEBHOOK_BACKLOG_BATCH`).
   * @defaultValue 1000
   */
  backlogBatch?: number;
  /**
   * Job lock, in ms: the jobs of a dispatcher that died are taken over within about 1.5 times this.
   * @defaultValue 10000
   */
  lockMs?: number;
};

export type StampcardDispatcher = {
  workers: Worker[];
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
    timeoutMs: opts.timeoutMs ?? 15_000,
    allowPrivateNetworks: opts.allowPrivateNetworks ?? false,
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
    inFlight: createInFlight(opts.endpointConcurrency ?? 32),
    batching: createDeliveryBatching(opts.ctx),
    policy: {
      schedule: opts.retrySchedule,
      disableAfterMs: opts.disableAfterMs ?? 5 * 24 * 3600 * 1000,
      throttle: { floorMs: opts.throttleFloorMs ?? 1000, freeThrottles: opts.freeThrottles ?? 10 },
    },
  };
  const processors: Processors<'dispatcher'> = {
    'webhook-events.fan-out': fanOut(opts.ctx, opts.queues),
    'webhook-message.deliver': deliverMessage(deliver),
    'webhook-messages.deliver': deliverMessages(deliver),
    'webhook-backlog.run': runBacklog(
      opts.ctx,
      opts.queues,
      opts.logger,
      opts.backlogBatch ?? DEFAULT_BACKLOG_BATCH,
    ),
  };
  const workers = startConsumers({
    consumer: 'dispatcher',
    processors,
    connection: opts.connection,
    prefix: opts.prefix,
    concurrency: opts.concurrency ?? 64,
    // Batches of one endpoint take its row lock in turn; two queues' worth keeps several endpoints moving.
    queueConcurrency: { 'webhook-events': 4, 'webhook-backlogs': 2 },
    lockMs: opts.lockMs ?? 10_000,
    // A delivery cut off by a dying process is taken over again rather than failed: it is at-least-once.
    maxStalledCount: 5,
    onFailed: (job, err) =>
      opts.logger.error({ err, jobId: job?.id, job: job?.name, attempts: job?.attemptsMade }, 'job failed'),
    onError: (err) => opts.logger.error({ err }, 'dispatcher error'),
  });
  const sweeper = createSweeper({
    ctx: opts.ctx,
    queues: opts.queues,
    logger: opts.logger,
    intervalMs: opts.sweepIntervalMs ?? 1000,
    overdueGraceMs: opts.overdueGraceMs ?? 30_000,
    overdueEvery: opts.overdueEvery ?? 10,
  });
  if (opts.sweep !== false) sweeper.start();
  return {
    workers,
    isRunning: () => workers.every((w) => w.isRunning()),
    sweeper,
    close: async () => {
      await sweeper.stop();
      await Promise.all(workers.map((w) => w.close()));
      await sender.close();
    },
  };
}
