import type { App, Deps } from '@stampcard/api';
import { createLogger, type Logger, loadConfig } from '@stampcard/config';
import { type Clock, type Ctx, systemClock } from '@stampcard/core';
import type { StampcardDispatcher } from '@stampcard/dispatcher';
import type { RedisClient } from '@stampcard/jobs';
import type { StampcardWorker } from '@stampcard/worker';
import { inject } from 'vitest';
import { startStack } from '../../scripts/stack';
import type { TestDb } from './db';
import { deleteRedisKeys, REDIS_URL, uniquePrefix } from './redis-keys';

export const OPERATOR_TOKEN = 'op_test_token_0123456789abcdef';

export type TestStack = {
  /** The test's own handle on its database, for factories and for checking rows. */
  ctx: Ctx;
  deps: Deps;
  /** The test database's URL (for a second process or pool). */
  dbUrl: string;
  prefix: string;
  app: App;
  /** Set when started with `http: true`: the API served on a free local port. */
  baseUrl: string | null;
  worker: StampcardWorker | null;
  /** A worker that is not running yet can be started later (e.g. after requests were accepted). */
  startWorker(): StampcardWorker;
  stopWorker(): Promise<void>;
  /** The dispatcher, when started with `dispatcher: true` (or later by `startDispatcher()`). */
  dispatcher: StampcardDispatcher | null;
  startDispatcher(): StampcardDispatcher;
  stopDispatcher(): Promise<void>;
  /** The worker's connection, for inspecting the queue. */
  redis: RedisClient;
  /**
   * The settings a process of the build needs to join this stack (`startProcess`, `startBuilt`): its database (through
   * the pooler, if any), its Redis (a cluster's nodes, a Sentinel's) and its queue prefix.
   */
  storeEnv: Record<string, string>;
  /** The port of the metrics listener, when started with `metricsPort`. */
  metricsPort: number | null;
  close(): Promise<void>;
};

export type TestStackOptions = {
  /** @defaultValue the system clock */
  clock?: Clock;
  /** @defaultValue true */
  worker?: boolean;
  /** Serve over HTTP too. @defaultValue false */
  http?: boolean;
  /** @defaultValue 10000 */
  maxWaitMs?: number;
  /** @defaultValue 5000 */
  requestTimeoutMs?: number;
  /** `DB_STATEMENT_TIMEOUT_MS`. @defaultValue 3000 */
  statementTimeoutMs?: number;
  /** @defaultValue 0: the relay (run by hand in tests) treats every QUEUED action as due */
  relayGraceMs?: number;
  /** @defaultValue 10000 */
  lockMs?: number;
  /** Run the webhook dispatcher. @defaultValue false */
  dispatcher?: boolean;
  /** Run the dispatcher's sweep timer. @defaultValue false: tests call `dispatcher.sweeper.runOnce()` */
  sweep?: boolean;
  /** `WEBHOOK_RETRY_SCHEDULE`. @defaultValue '50,100,200': three quick retries */
  retrySchedule?: string;
  /** `WEBHOOK_TIMEOUT_MS`. @defaultValue 2000 */
  webhookTimeoutMs?: number;
  /** `WEBHOOK_ALLOW_PRIVATE_NETWORKS`: local receivers need it. @defaultValue true */
  allowPrivateNetworks?: boolean;
  /** `WEBHOOK_DNS_SERVERS`: a test's own DNS server. @defaultValue the system's */
  dnsServers?: string;
  /** `WEBHOOK_DNS_TIMEOUT_MS`. @defaultValue 5000 */
  dnsTimeoutMs?: number;
  /** `WEBHOOK_THROTTLE_FLOOR_MS`. @defaultValue 1000 */
  throttleFloorMs?: number;
  /** `WEBHOOK_FREE_THROTTLES`. @defaultValue 10 */
  freeThrottles?: number;
  /** `WEBHOOK_DISABLE_AFTER_MS`. @defaultValue 432000000 (5 days) */
  disableAfterMs?: number;
  /** `WEBHOOK_ENDPOINT_CONCURRENCY`. @defaultValue 32 */
  endpointConcurrency?: number;
  /** The dispatcher's job slots (`DISPATCHER_CONCURRENCY`). @defaultValue 16 */
  dispatcherConcurrency?: number;
  /** A PENDING message overdue by this is checked for a live job by the sweep. @defaultValue 5000 with `sweep`, else 0 */
  overdueGraceMs?: number;
  /** The rate limits' clock (window edges, lease expiry). @defaultValue Redis's own clock */
  limitsClock?: Clock;
  /** `RATE_LIMIT_TIMEOUT_MS`. @defaultValue 250 */
  rateLimitTimeoutMs?: number;
  /** Another Redis (a test's own server). @defaultValue `REDIS_URL`, or the local Redis */
  redisUrl?: string;
  /** Run the worker's relay timer (and partition maintenance), as `npm start` does. @defaultValue false */
  relay?: boolean;
  /** `REDIS_CLUSTER_NODES`: a Redis Cluster of the test's own (it wins over `redisUrl`). @defaultValue unset */
  redisClusterNodes?: string;
  /** `REDIS_SENTINELS` and `REDIS_SENTINEL_NAME`: Redis behind Sentinel, of the test's own. @defaultValue unset */
  redisSentinel?: { sentinels: string; name: string };
  /**
   * The test's database through a pooler in transaction mode (`DATABASE_POOLER=transaction`), the database itself
   * as `DATABASE_DIRECT_URL`. @defaultValue unset: PostgreSQL itself
   */
  pooledUrl?: string;
  /** `QUEUE_SHARDS`. @defaultValue 1 */
  queueShards?: number;
  /** `DATABASE_READ_URL`: a read replica of the test's database. @defaultValue unset */
  readUrl?: string;
  /** `DATABASE_READ_MAX_LAG_MS`. @defaultValue 5000 */
  readMaxLagMs?: number;
  /** `WEBHOOK_BACKLOG_BATCH`. @defaultValue 1000 */
  backlogBatch?: number;
  /** Where the stack logs. @defaultValue a silent logger (`TEST_LOG_LEVEL` sets its level) */
  logger?: Logger;
  /** `METRICS_TOKEN`. @defaultValue unset */
  metricsToken?: string;
  /** Start the metrics listener on this port (0: a free one). @defaultValue none */
  metricsPort?: number;
  /** `OTEL_EXPORTER_OTLP_ENDPOINT` (the test starts the tracer provider itself). @defaultValue unset */
  otlpEndpoint?: string;
};

/** The run's Redis Cluster (`TEST_STORES=cluster`), if any. */
const runClusterNodes = () => inject('redisClusterNodes') || undefined;

/**
 * The test database `url` through the run's PgBouncer (`TEST_STORES=pgbouncer`), if any. A database the test
 * reaches another way (a PostgreSQL of its own, a proxy that counts or freezes) is left as it is.
 */
function runPooledUrl(url: string): string | undefined {
  const pooler = inject('poolerUrl');
  if (!pooler || new URL(url).host !== new URL(inject('baseDatabaseUrl')).host) return undefined;
  return pooler.replace('/DATABASE', new URL(url).pathname);
}

/**
 * The whole service on a test's own database and a queue prefix of its own, built by the same composition
 * root as `npm start` (`scripts/stack.ts`) from a `Config`: only the settings differ.
 */
export async function createTestStack(db: TestDb, opts: TestStackOptions = {}): Promise<TestStack> {
  const clock = opts.clock ?? systemClock;
  const prefix = uniquePrefix('stampcard_test');
  const redisUrl = opts.redisUrl ?? REDIS_URL;
  const logger =
    opts.logger ?? createLogger({ level: process.env.TEST_LOG_LEVEL ?? 'silent', name: 'stampcard-test' });
  // The run's stores (`TEST_STORES`), unless the test brings its own.
  const pooledUrl = opts.pooledUrl ?? runPooledUrl(db.url);
  const redisClusterNodes =
    opts.redisClusterNodes ?? (opts.redisUrl || opts.redisSentinel ? undefined : runClusterNodes());
  // Where the stack's stores are: its own settings, and those of a process of the build joining it (`storeEnv`).
  const stores = {
    DATABASE_URL: pooledUrl ?? db.url,
    DATABASE_POOLER: pooledUrl ? 'transaction' : undefined,
    DATABASE_DIRECT_URL: pooledUrl ? db.url : undefined,
    REDIS_URL: redisUrl,
    REDIS_CLUSTER_NODES: redisClusterNodes,
    REDIS_SENTINELS: opts.redisSentinel?.sentinels,
    REDIS_SENTINEL_NAME: opts.redisSentinel?.name,
    QUEUE_PREFIX: prefix,
    QUEUE_SHARDS: opts.queueShards?.toString(),
  };
  const config = loadConfig({
    NODE_ENV: 'test',
    ...stores,
    DATABASE_READ_URL: opts.readUrl,
    DATABASE_READ_MAX_LAG_MS: opts.readMaxLagMs?.toString(),
    OPERATOR_TOKEN,
    PORT: '0',
    HOST: '127.0.0.1',
    WORKER_CONCURRENCY: '16',
    WORKER_BATCH_WAIT_MS: '2',
    RELAY_GRACE_MS: String(opts.relayGraceMs ?? 0),
    WORKER_LOCK_MS: opts.lockMs?.toString(),
    REQUEST_TIMEOUT_MS: opts.requestTimeoutMs?.toString(),
    DB_STATEMENT_TIMEOUT_MS: opts.statementTimeoutMs?.toString(),
    WEBHOOK_RETRY_SCHEDULE: opts.retrySchedule ?? '50,100,200',
    WEBHOOK_TIMEOUT_MS: String(opts.webhookTimeoutMs ?? 2000),
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: String(opts.allowPrivateNetworks ?? true),
    WEBHOOK_ENDPOINT_CONCURRENCY: opts.endpointConcurrency?.toString(),
    WEBHOOK_DNS_SERVERS: opts.dnsServers,
    WEBHOOK_DNS_TIMEOUT_MS: opts.dnsTimeoutMs?.toString(),
    WEBHOOK_THROTTLE_FLOOR_MS: opts.throttleFloorMs?.toString(),
    WEBHOOK_FREE_THROTTLES: opts.freeThrottles?.toString(),
    WEBHOOK_DISABLE_AFTER_MS: opts.disableAfterMs?.toString(),
    DISPATCHER_CONCURRENCY: String(opts.dispatcherConcurrency ?? 16),
    DISPATCH_SWEEP_MS: '200',
    RATE_LIMIT_TIMEOUT_MS: opts.rateLimitTimeoutMs?.toString(),
    WEBHOOK_BACKLOG_BATCH: opts.backlogBatch?.toString(),
    METRICS_TOKEN: opts.metricsToken,
    OTEL_EXPORTER_OTLP_ENDPOINT: opts.otlpEndpoint,
  });
  const stack = await startStack({
    config,
    logger,
    clock,
    api: opts.http ? 'serve' : 'in-process',
    worker: opts.worker !== false,
    relay: opts.relay ?? false,
    dispatcher: opts.dispatcher ?? false,
    sweep: opts.sweep ?? false,
    // A sweep run by hand looks at once; the running sweep (every 200 ms) waits as in production for the hand-off
    // that follows a commit, or it would race it and send a message from two jobs (seen in CI after a replay).
    overdueGraceMs: opts.overdueGraceMs ?? (opts.sweep ? 5000 : 0),
    // Every sweep a test runs by hand also looks for overdue messages.
    overdueEvery: 1,
    apiOverrides: opts.maxWaitMs === undefined ? {} : { maxWaitMs: opts.maxWaitMs },
    limitsClock: opts.limitsClock,
    metricsPort: opts.metricsPort,
  });
  const redis = stack.queues.consumer.redis;
  return {
    // The API's lookup cache too, so that a change a test makes through core is seen by the API at once.
    ctx: { db: db.db, clock, cache: stack.deps?.cache },
    deps: stack.deps!,
    dbUrl: db.url,
    prefix,
    app: stack.app!,
    baseUrl: stack.api ? `http://127.0.0.1:${stack.api.port}` : null,
    get worker() {
      return stack.worker;
    },
    startWorker: stack.startWorker,
    stopWorker: stack.stopWorker,
    get dispatcher() {
      return stack.dispatcher;
    },
    startDispatcher: stack.startDispatcher,
    stopDispatcher: stack.stopDispatcher,
    redis,
    storeEnv: Object.fromEntries(
      Object.entries(stores).filter((e): e is [string, string] => e[1] !== undefined),
    ),
    metricsPort: stack.metricsListener?.port ?? null,
    close: async () => {
      await stack.api?.close();
      await Promise.all([stack.stopWorker(), stack.stopDispatcher()]);
      await stack.close();
      // Last, on a connection of its own: queues and workers write keys as they close. (A cluster or a Sentinel
      // is the test's own, and goes with it.)
      if (!redisClusterNodes && !opts.redisSentinel) await deleteRedisKeys(redisUrl, prefix);
    },
  };
}
