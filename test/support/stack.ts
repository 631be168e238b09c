import type { App, Deps } from '@stampcard/api';
import { createLogger, type Logger, loadConfig } from '@stampcard/config';
import { type Clock, type Ctx, systemClock } from '@stampcard/core';
import type { StampcardDispatcher } from '@stampcard/dispatcher';
import type { StampcardWorker } from '@stampcard/worker';
import type { Redis } from 'ioredis';
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
  redis: Redis;
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
  /** A PENDING message overdue by this is checked for a live job by the sweep. @defaultValue 0 */
  overdueGraceMs?: number;
  /** The rate limits' clock (window edges, lease expiry). @defaultValue Redis's own clock */
  limitsClock?: Clock;
  /** `RATE_LIMIT_TIMEOUT_MS`. @defaultValue 250 */
  rateLimitTimeoutMs?: number;
  /** Another Redis (a test's own server). @defaultValue `REDIS_URL`, or the local Redis */
  redisUrl?: string;
  /** `WEBHOOK_BACKLOG_BATCH`. @defaultValue 1000 */
  backlogBatch?: number;
  /** Where the stack logs. @defaultValue a silent logger (`TEST_LOG_LEVEL` sets its level) */
  logger?: Logger;
};

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
  const config = loadConfig({
    NODE_ENV: 'test',
    DATABASE_URL: db.url,
    REDIS_URL: redisUrl,
    QUEUE_PREFIX: prefix,
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
    DISPATCHER_CONCURRENCY: '16',
    DISPATCH_SWEEP_MS: '200',
    RATE_LIMIT_TIMEOUT_MS: opts.rateLimitTimeoutMs?.toString(),
    WEBHOOK_BACKLOG_BATCH: opts.backlogBatch?.toString(),
  });
  const stack = await startStack({
    config,
    logger,
    clock,
    api: opts.http ? 'serve' : 'in-process',
    worker: opts.worker !== false,
    relay: false,
    dispatcher: opts.dispatcher ?? false,
    sweep: opts.sweep ?? false,
    overdueGraceMs: opts.overdueGraceMs ?? 0,
    // Every sweep a test runs by hand also looks for overdue messages.
    overdueEvery: 1,
    apiOverrides: opts.maxWaitMs === undefined ? {} : { maxWaitMs: opts.maxWaitMs },
    limitsClock: opts.limitsClock,
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
    close: async () => {
      await stack.api?.close();
      await Promise.all([stack.stopWorker(), stack.stopDispatcher()]);
      await stack.close();
      // Last, on a connection of its own: queues and workers write keys as they close.
      await deleteRedisKeys(redisUrl, prefix);
    },
  };
}
