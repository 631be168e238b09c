import { randomBytes } from 'node:crypto';
import { createApp, type Deps, startApi } from '@stampcard/api';
import { createLogger } from '@stampcard/config';
import { type Clock, type Ctx, systemClock } from '@stampcard/core';
import { connectQueues } from '@stampcard/jobs';
import { type StampcardWorker, startWorker } from '@stampcard/worker';
import type { Redis } from 'ioredis';
import type { TestDb } from './db';

export const OPERATOR_TOKEN = 'op_test_token_0123456789abcdef';
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

export type TestStack = {
  ctx: Ctx;
  deps: Deps;
  prefix: string;
  app: ReturnType<typeof createApp>;
  /** Set when started with `http: true`: the API served on a free local port. */
  baseUrl: string | null;
  worker: StampcardWorker | null;
  /** A worker that is not running yet can be started later (e.g. after requests were accepted). */
  startWorker(): StampcardWorker;
  stopWorker(): Promise<void>;
  /** A second connection with the worker's settings, for inspecting the queue. */
  redis: Redis;
  close(): Promise<void>;
};

export type TestStackOptions = {
  clock?: Clock;
  worker?: boolean;
  http?: boolean;
  maxWaitMs?: number;
  requestTimeoutMs?: number;
  relayGraceMs?: number;
  lockMs?: number;
};

/** The whole service on a test's own database and a queue prefix of its own. */
export async function createTestStack(db: TestDb, opts: TestStackOptions = {}): Promise<TestStack> {
  const clock = opts.clock ?? systemClock;
  const prefix = `stampcard_test_${randomBytes(6).toString('hex')}`;
  const logger = createLogger({ level: process.env.TEST_LOG_LEVEL ?? 'silent', name: 'stampcard-test' });
  const connections = await connectQueues(REDIS_URL, prefix, (err, side) =>
    logger.warn({ err, side }, 'redis connection error'),
  );
  const { producer, consumer } = connections;
  const ctx: Ctx = { db: db.db, clock };
  const deps: Deps = {
    db: db.db,
    redis: producer.redis,
    queues: producer.queues,
    clock,
    logger,
    operatorToken: OPERATOR_TOKEN,
    maxWaitMs: opts.maxWaitMs,
    requestTimeoutMs: opts.requestTimeoutMs,
  };
  const app = createApp(deps);
  const server = opts.http ? await startApi(deps, { port: 0, host: '127.0.0.1' }) : null;

  let worker: StampcardWorker | null = null;
  const launch = () => {
    worker ??= startWorker({
      ctx,
      connection: consumer.redis,
      queues: consumer.queues,
      prefix,
      logger,
      concurrency: 16,
      batchWaitMs: 2,
      relay: false,
      relayGraceMs: opts.relayGraceMs ?? 0,
      lockMs: opts.lockMs,
    });
    return worker;
  };
  if (opts.worker !== false) launch();

  return {
    ctx,
    deps,
    prefix,
    app,
    baseUrl: server ? `http://127.0.0.1:${server.port}` : null,
    get worker() {
      return worker;
    },
    startWorker: launch,
    stopWorker: async () => {
      await worker?.close();
      worker = null;
    },
    redis: consumer.redis,
    close: async () => {
      await server?.close();
      await worker?.close();
      const keys = await consumer.redis.keys(`${prefix}:*`);
      if (keys.length > 0) await consumer.redis.del(...keys);
      await connections.close();
    },
  };
}
