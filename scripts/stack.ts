import {
  type App,
  appliedSignal,
  createApp,
  createRateLimiter,
  type Deps,
  limiterConnection,
  type RunningApi,
  sharedLookupCache,
  startApi,
} from '@stampcard/api';
import type { Config, Logger } from '@stampcard/config';
import { type Clock, systemClock } from '@stampcard/core';
import { createDb, type DbHandle } from '@stampcard/db';
import { dispatcherSettings, type StampcardDispatcher, startDispatcher } from '@stampcard/dispatcher';
import { connectQueues, type QueueConnections, redisReady, warnOnEvictionPolicy } from '@stampcard/jobs';
import { type StampcardWorker, startWorker } from '@stampcard/worker';

export type StackOptions = {
  config: Config;
  logger: Logger;
  /** @defaultValue the system clock */
  clock?: Clock;
  /**
   * The API: `'serve'` listens on `PORT`/`HOST`; `'in-process'` only builds the app (tests call
   * `app.request`); `false`: no API.
   * @defaultValue 'serve'
   */
  api?: 'serve' | 'in-process' | false;
  /**
   * Start the worker now (`startWorker()` can start it later).
   * @defaultValue true
   */
  worker?: boolean;
  /**
   * Run the relay's timer beside the worker (tests call `worker.relay.runOnce()` instead).
   * @defaultValue true
   */
  relay?: boolean;
  /**
   * Start the webhook dispatcher now (`startDispatcher()` can start it later).
   * @defaultValue true
   */
  dispatcher?: boolean;
  /**
   * Run the dispatcher's sweep timer (tests call `dispatcher.sweeper.runOnce()` instead).
   * @defaultValue true
   */
  sweep?: boolean;
  /**
   * A PENDING message overdue by this much is checked for a live delivery job, in ms.
   * @defaultValue 30000
   */
  overdueGraceMs?: number;
  /**
   * Overdue messages are looked for on every n-th sweep.
   * @defaultValue 10
   */
  overdueEvery?: number;
  /**
   * API dependencies to replace, for settings that are no environment variable (a test's shorter `maxWaitMs`).
   * @defaultValue none
   */
  apiOverrides?: Partial<Deps>;
  /**
   * The clock of the rate limits' windows and leases (tests walk window edges with a manual one).
   * @defaultValue Redis's own clock
   */
  limitsClock?: Clock;
};

export type Stack = {
  config: Config;
  /** What the API was built from, and the app itself; null without an API. */
  deps: Deps | null;
  app: App | null;
  /** The HTTP server when the API is served. */
  api: RunningApi | null;
  /** The running worker, if any. */
  readonly worker: StampcardWorker | null;
  /** Starts the worker if it is not running (and its database pool with it). */
  startWorker(): StampcardWorker;
  /** Finishes the jobs in hand and stops the worker; `startWorker()` starts a new one. */
  stopWorker(): Promise<void>;
  /** The running dispatcher, if any. */
  readonly dispatcher: StampcardDispatcher | null;
  /** Starts the dispatcher if it is not running (and its database pool with it). */
  startDispatcher(): StampcardDispatcher;
  /** Finishes the deliveries in hand and stops the dispatcher. */
  stopDispatcher(): Promise<void>;
  queues: QueueConnections;
  /** Graceful stop: no new requests, in-flight jobs finished, pools and connections closed. */
  close(): Promise<void>;
};

/**
 * The composition root: everything `npm start`, `start.ts api|worker` and the tests run is built here from a
 * `Config`, so they cannot drift apart. API and worker get separate pools, as separate processes would have:
 * a deep queue must not starve the API of connections.
 */
export async function startStack(opts: StackOptions): Promise<Stack> {
  const { config, logger } = opts;
  const clock = opts.clock ?? systemClock;
  const apiMode = opts.api ?? 'serve';
  const pool = (max: number) =>
    createDb(config.DATABASE_URL, { max, statementTimeoutMs: config.DB_STATEMENT_TIMEOUT_MS });
  const queues = await connectQueues(config.REDIS_URL, config.QUEUE_PREFIX, (err, side) =>
    logger.warn({ err, side }, 'redis connection error'),
  );

  const apiDb = apiMode === false ? null : pool(10);
  const cache =
    apiDb &&
    (await sharedLookupCache({
      redis: queues.producer.redis,
      prefix: config.QUEUE_PREFIX,
      logger,
      ttlMs: config.LOOKUP_CACHE_MS,
    }));
  const applied = apiDb && (await appliedSignal(queues.producer.redis, config.QUEUE_PREFIX, logger));
  if (apiDb) await warnOnEvictionPolicy(queues.producer.redis, logger);
  const limiterRedis = apiDb && limiterConnection(config.REDIS_URL, config.RATE_LIMIT_TIMEOUT_MS);
  if (limiterRedis) {
    limiterRedis.on('error', (err) => logger.debug({ err }, 'rate limiter connection error'));
    await redisReady(limiterRedis);
  }
  const limits =
    limiterRedis &&
    createRateLimiter({ redis: limiterRedis, prefix: config.QUEUE_PREFIX, logger, clock: opts.limitsClock });
  const deps: Deps | null = apiDb && {
    db: apiDb.db,
    redis: queues.producer.redis,
    queues: queues.producer.queues,
    clock,
    logger,
    operatorToken: config.OPERATOR_TOKEN,
    secureCookies: config.NODE_ENV !== 'development',
    redisPrefix: config.QUEUE_PREFIX,
    cache: cache ?? undefined,
    applied: applied?.signal,
    allowPrivateNetworks: config.WEBHOOK_ALLOW_PRIVATE_NETWORKS,
    webhookBacklogBatch: config.WEBHOOK_BACKLOG_BATCH,
    supportUrl: config.SUPPORT_URL,
    publicUrl: config.PUBLIC_URL,
    requestTimeoutMs: config.REQUEST_TIMEOUT_MS,
    exportConcurrency: config.EXPORT_CONCURRENCY,
    statementTimeoutMs: config.DB_STATEMENT_TIMEOUT_MS,
    limits: limits ?? undefined,
    trustedProxyHops: config.TRUSTED_PROXY_HOPS,
    ...opts.apiOverrides,
  };
  const app = deps && createApp(deps);
  const api =
    deps && apiMode === 'serve' ? await startApi(deps, { port: config.PORT, host: config.HOST }) : null;

  let workerDb: DbHandle | null = null;
  let worker: StampcardWorker | null = null;
  const launch = () => {
    workerDb ??= pool(6);
    worker ??= startWorker({
      ctx: { db: workerDb.db, clock },
      connection: queues.consumer.redis,
      queues: queues.consumer.queues,
      prefix: config.QUEUE_PREFIX,
      logger,
      concurrency: config.WORKER_CONCURRENCY,
      batchSize: config.WORKER_BATCH_SIZE,
      batchWaitMs: config.WORKER_BATCH_WAIT_MS,
      relayIntervalMs: config.RELAY_INTERVAL_MS,
      relayGraceMs: config.RELAY_GRACE_MS,
      lockMs: config.WORKER_LOCK_MS,
      relay: opts.relay ?? true,
    });
    return worker;
  };
  if (opts.worker ?? true) launch();
  const stopWorker = async () => {
    await worker?.close();
    worker = null;
  };

  let dispatcherDb: DbHandle | null = null;
  let dispatcher: StampcardDispatcher | null = null;
  const launchDispatcher = () => {
    dispatcherDb ??= pool(6);
    dispatcher ??= startDispatcher({
      ctx: { db: dispatcherDb.db, clock },
      connection: queues.consumer.redis,
      queues: queues.consumer.queues,
      prefix: config.QUEUE_PREFIX,
      logger,
      ...dispatcherSettings(config),
      overdueGraceMs: opts.overdueGraceMs,
      overdueEvery: opts.overdueEvery,
      sweep: opts.sweep ?? true,
    });
    return dispatcher;
  };
  if (opts.dispatcher ?? true) launchDispatcher();
  const stopDispatcher = async () => {
    await dispatcher?.close();
    dispatcher = null;
  };

  return {
    config,
    deps,
    app,
    api,
    get worker() {
      return worker;
    },
    startWorker: launch,
    stopWorker,
    get dispatcher() {
      return dispatcher;
    },
    startDispatcher: launchDispatcher,
    stopDispatcher,
    queues,
    close: async () => {
      await api?.close();
      await Promise.all([stopWorker(), stopDispatcher()]);
      cache?.close();
      applied?.close();
      await queues.close();
      limiterRedis?.disconnect();
      await Promise.all([apiDb?.close(), workerDb?.close(), dispatcherDb?.close()]);
    },
  };
}
