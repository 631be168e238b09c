import type { Queues, RedisClient } from '@stampcard/jobs';
import type postgres from 'postgres';
import type { Receiver } from '../test/support/receiver';
import type { Seeded } from './seed';
import type { ServiceRunner } from './service';
import type { Settings } from './settings';

/** What every figure works with: the running service, its stores, the seeded account and the receiver. */
export type Bench = {
  settings: Settings;
  services: ServiceRunner;
  /** `http://127.0.0.1:<port>` of each API process. */
  apiUrls: string[];
  dbUrl: string;
  /** The standalone Redis the run was given (`REDIS_URL`), whatever the service's queues run on. */
  redisUrl: string;
  /** The bench database, for seeding and polling (never on a measured path of the service). */
  sql: postgres.Sql;
  /** The service's queues, under the run's QUEUE_PREFIX, for the apply fast path. */
  queues: Queues;
  /** The connection under `queues` (a Redis Cluster's with `--redis-cluster`), for Redis's own counts. */
  redis: RedisClient;
  seeded: Seeded;
  /** The local webhook receiver (test/support/receiver.ts) the endpoints point at. */
  receiver: Receiver;
  token: string;
};
