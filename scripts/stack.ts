import type { Server } from 'node:http';
import {
  type App,
  appliedSignal,
  buildErrorBody,
  createApp,
  createRateLimiter,
  createReadiness,
  type Deps,
  defaultSupportUrl,
  HTTP_ERRORS,
  limiterConnection,
  type RunningApi,
  sharedLookupCache,
  startApi,
} from '@stampcard/api';
import { type Config, directDatabaseUrl, type Logger } from '@stampcard/config';
import { type Clock, databaseSize, retentionOverview, systemClock } from '@stampcard/core';
import {
  createDb,
  createReplica,
  type Database,
  type DbHandle,
  DEFAULT_RETENTION,
  type RetentionPolicy,
} from '@stampcard/db';
import { dispatcherSettings, type StampcardDispatcher, startDispatcher } from '@stampcard/dispatcher';
import {
  connectQueues,
  type QueueConnections,
  redisReady,
  redisTarget,
  warnOnEvictionPolicy,
} from '@stampcard/jobs';
import {
  acceptMetrics,
  applyMetrics,
  createRegistry,
  deliveryMetrics,
  httpMetrics,
  type PoolStats,
  partitionMetrics,
  poolMetrics,
  queueMetrics,
  type Registry,
  replicaMetrics,
  startMetricsListener,
} from '@stampcard/telemetry';
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
   * Told when a worker's or dispatcher's queue consumer stays stuck after being replaced (see `watchConsumers`):
   * `npm start`'s roles exit, for their supervisor to start a clean process.
   * @defaultValue none: the consumer is replaced again, with a warning
   */
  onConsumerStuck?: (queue: string) => void;
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
  /**
   * Serve `/metrics`, `/livez` and `/readyz` on this port of `HOST` (`METRICS_PORT`), for a process that serves
   * no API (a worker or dispatcher alone); the API serves them on its own port.
   * @defaultValue none
   */
  metricsPort?: number;
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
  /** The process's metrics: what `/metrics` shows. */
  registry: Registry;
  /** The metrics listener, when `metricsPort` was given. */
  metricsListener: (Server & { port: number }) | null;
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
    createDb(config.DATABASE_URL, {
      max,
      statementTimeoutMs: config.DB_STATEMENT_TIMEOUT_MS,
      pooler: config.DATABASE_POOLER,
    });
  const queues = await connectQueues(
    redisTarget(config),
    config.QUEUE_PREFIX,
    (err, side) => logger.warn({ err, side }, 'redis connection error'),
    config.QUEUE_SHARDS,
  );

  // One registry for the process: each role below adds its own metrics to it.
  const registry = createRegistry();
  const pools: { name: string; stats: () => PoolStats }[] = [];
  poolMetrics(registry, pools);
  const watched = (name: string, handle: DbHandle) => {
    pools.push({ name, stats: () => (handle.sql as unknown as { stats: PoolStats }).stats });
    return handle;
  };

  const apiDb = apiMode === false ? null : watched('api', pool(10));
  const replica =
    apiDb && config.DATABASE_READ_URL
      ? createReplica(config.DATABASE_READ_URL, {
          max: 5,
          statementTimeoutMs: config.DB_STATEMENT_TIMEOUT_MS,
          pooler: config.DATABASE_POOLER,
          maxLagMs: config.DATABASE_READ_MAX_LAG_MS,
          onChange: (inUse, lagMs, err) =>
            (inUse ? logger.info : logger.warn).call(
              logger,
              { err, lagMs, maxLagMs: config.DATABASE_READ_MAX_LAG_MS },
              inUse ? 'read replica in use' : 'read replica out of use: reading the primary',
            ),
        })
      : null;
  if (replica) {
    watched('replica', replica);
    replicaMetrics(registry, replica);
  }
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
  const limiterRedis = apiDb && limiterConnection(redisTarget(config), config.RATE_LIMIT_TIMEOUT_MS);
  if (limiterRedis) {
    limiterRedis.on('error', (err) => logger.debug({ err }, 'rate limiter connection error'));
    await redisReady(limiterRedis);
  }
  const limits =
    limiterRedis &&
    createRateLimiter({ redis: limiterRedis, prefix: config.QUEUE_PREFIX, logger, clock: opts.limitsClock });
  const deps: Deps | null = apiDb && {
    db: apiDb.db,
    replica: replica ?? undefined,
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
    maxRequestsInFlight: config.MAX_REQUESTS_IN_FLIGHT,
    exportConcurrency: config.EXPORT_CONCURRENCY,
    importConcurrency: config.IMPORT_CONCURRENCY,
    statementTimeoutMs: config.DB_STATEMENT_TIMEOUT_MS,
    limits: limits ?? undefined,
    trustedProxyHops: config.TRUSTED_PROXY_HOPS,
    serverTiming: config.SERVER_TIMING,
    metrics: { registry, http: httpMetrics(registry), accept: acceptMetrics(registry) },
    metricsToken: config.METRICS_TOKEN,
    retention: retentionPolicy(config),
    // The process started its tracer provider (start.ts, or a test) when the endpoint is set.
    tracing: config.OTEL_EXPORTER_OTLP_ENDPOINT !== undefined,
    ...opts.apiOverrides,
  };
  const app = deps && createApp(deps);
  const api =
    deps && apiMode === 'serve' ? await startApi(deps, { port: config.PORT, host: config.HOST }) : null;

  let workerDb: DbHandle | null = null;
  // One connection to PostgreSQL itself (`DATABASE_DIRECT_URL`), made when something needs a session of its own.
  let direct: DbHandle | null = null;
  const directPool = () => {
    direct ??= createDb(directDatabaseUrl(config), {
      max: 1,
      statementTimeoutMs: config.DB_STATEMENT_TIMEOUT_MS,
    });
    return direct;
  };
  let worker: StampcardWorker | null = null;
  // A worker process reports every queue's depth and age (one process per deployment should: the workers).
  let workerMetrics: ReturnType<typeof applyMetrics> | null = null;
  const launch = () => {
    workerDb ??= watched('worker', pool(6));
    if (!workerMetrics) {
      queueMetrics(registry, queues.producer.queues.all);
      const db = workerDb.db;
      partitionMetrics(registry, async () => ({
        tables: (await retentionOverview({ db, clock }, retentionPolicy(config))).map((t) => ({
          table: t.table,
          partitions: t.partitions.length,
          madeUntil: t.madeUntil,
          overdue: t.partitions.filter((p) => p.dropsAt <= clock.now().getTime()).length,
          waiting: t.waitingInDefault,
        })),
        databaseBytes: await databaseSize(db),
      }));
      workerMetrics = applyMetrics(registry);
    }
    worker ??= startWorker({
      ctx: { db: workerDb.db, clock },
      // Partition maintenance holds a session lock: past a pooler, on a connection to PostgreSQL itself.
      sql: config.DATABASE_POOLER === 'transaction' ? directPool().sql : workerDb.sql,
      connection: queues.consumer.redis,
      queueShards: config.QUEUE_SHARDS,
      queues: queues.consumer.queues,
      prefix: config.QUEUE_PREFIX,
      logger,
      concurrency: config.WORKER_CONCURRENCY,
      batchSize: config.WORKER_BATCH_SIZE,
      batchWaitMs: config.WORKER_BATCH_WAIT_MS,
      relayIntervalMs: config.RELAY_INTERVAL_MS,
      relayGraceMs: config.RELAY_GRACE_MS,
      lockMs: config.WORKER_LOCK_MS,
      retention: retentionPolicy(config),
      relay: opts.relay ?? true,
      metrics: workerMetrics,
      onConsumerStuck: opts.onConsumerStuck,
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
  let dispatcherMetrics: ReturnType<typeof deliveryMetrics> | null = null;
  const launchDispatcher = () => {
    dispatcherDb ??= watched('dispatcher', pool(6));
    dispatcherMetrics ??= deliveryMetrics(registry);
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
      metrics: dispatcherMetrics,
      onConsumerStuck: opts.onConsumerStuck,
    });
    return dispatcher;
  };
  if (opts.dispatcher ?? true) launchDispatcher();
  const stopDispatcher = async () => {
    await dispatcher?.close();
    dispatcher = null;
  };

  const metricsListener =
    opts.metricsPort === undefined
      ? null
      : await startMetricsListener({
          port: opts.metricsPort,
          host: config.HOST,
          registry,
          token: config.METRICS_TOKEN,
          logger,
          ready: roleReadiness(queues, () => (workerDb ?? dispatcherDb)?.db),
          refuse: ({ code, message }) => ({
            status: HTTP_ERRORS[code].status,
            body: buildErrorBody(code, message, {
              supportUrl:
                config.SUPPORT_URL ??
                defaultSupportUrl(config.PUBLIC_URL ?? `http://localhost:${config.PORT}`),
            }),
          }),
        });

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
    registry,
    metricsListener,
    close: async () => {
      metricsListener?.close();
      await api?.close();
      await Promise.all([stopWorker(), stopDispatcher()]);
      cache?.close();
      applied?.close();
      await queues.close();
      limiterRedis?.disconnect();
      await Promise.all([
        apiDb?.close(),
        replica?.close(),
        workerDb?.close(),
        dispatcherDb?.close(),
        direct?.close(),
      ]);
    },
  };
}

/**
 * `/readyz` of a worker or dispatcher process: ready while its pool's PostgreSQL and the queues' Redis both
 * answer (neither role can work without either), checked at most once a second whatever the callers.
 */
function roleReadiness(queues: QueueConnections, db: () => Database | undefined) {
  let check: ReturnType<typeof createReadiness> | null = null;
  return async () => {
    const pool = db();
    if (!pool) return { ready: false, checks: {} };
    check ??= createReadiness({ db: pool, redis: queues.consumer.redis });
    const checks = await check();
    return { ready: checks.postgres === 'ok' && checks.redis === 'ok', checks };
  };
}

/** How long each kind of row is kept, in ms, from the `*_RETENTION_DAYS` settings (keys: their 24 h). */
export function retentionPolicy(config: Config): RetentionPolicy {
  const days = (n: number) => n * 86_400_000;
  return {
    events: days(config.EVENT_RETENTION_DAYS),
    attempts: days(config.ATTEMPT_RETENTION_DAYS),
    audit: days(config.AUDIT_RETENTION_DAYS),
    idempotency: DEFAULT_RETENTION.idempotency,
  };
}
