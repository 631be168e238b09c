import { type RunningApi, startApi } from '@stampcard/api';
import type { Config, Logger } from '@stampcard/config';
import { type Clock, systemClock } from '@stampcard/core';
import { createDb } from '@stampcard/db';
import { connectQueues } from '@stampcard/jobs';
import { type StampcardWorker, startWorker } from '@stampcard/worker';

export type StackOptions = {
  config: Config;
  logger: Logger;
  clock?: Clock;
  /** Run the API (default true) and the worker with its relay (default true). */
  api?: boolean;
  worker?: boolean;
};

export type Stack = {
  api: RunningApi | null;
  worker: StampcardWorker | null;
  /** Graceful stop: no new requests, in-flight jobs finished, pools closed. */
  close(): Promise<void>;
};

/** API and worker in one process, as `npm start` runs them. Production may run each on its own. */
export async function startStack(opts: StackOptions): Promise<Stack> {
  const { config, logger } = opts;
  const clock = opts.clock ?? systemClock;
  // Separate pools, as separate processes would have: a deep queue must not starve the API of connections.
  const timeouts = { statementTimeoutMs: config.DB_STATEMENT_TIMEOUT_MS };
  const apiDb = opts.api === false ? null : createDb(config.DATABASE_URL, { max: 10, ...timeouts });
  const workerDb = opts.worker === false ? null : createDb(config.DATABASE_URL, { max: 6, ...timeouts });
  const connections = await connectQueues(config.REDIS_URL, config.QUEUE_PREFIX, (err, side) =>
    logger.warn({ err, side }, 'redis connection error'),
  );
  const { producer, consumer } = connections;

  const api =
    opts.api === false
      ? null
      : await startApi(
          {
            db: apiDb!.db,
            redis: producer.redis,
            queues: producer.queues,
            clock,
            logger,
            operatorToken: config.OPERATOR_TOKEN,
            supportUrl: config.SUPPORT_URL,
            requestTimeoutMs: config.REQUEST_TIMEOUT_MS,
          },
          { port: config.PORT, host: config.HOST },
        );
  const worker =
    opts.worker === false
      ? null
      : startWorker({
          ctx: { db: workerDb!.db, clock },
          connection: consumer.redis,
          queues: consumer.queues,
          prefix: config.QUEUE_PREFIX,
          logger,
          concurrency: config.WORKER_CONCURRENCY,
          batchWaitMs: config.WORKER_BATCH_WAIT_MS,
          relayIntervalMs: config.RELAY_INTERVAL_MS,
          relayGraceMs: config.RELAY_GRACE_MS,
          lockMs: config.WORKER_LOCK_MS,
        });

  return {
    api,
    worker,
    close: async () => {
      await api?.close();
      await worker?.close();
      await connections.close();
      await Promise.all([apiDb?.close(), workerDb?.close()]);
    },
  };
}
