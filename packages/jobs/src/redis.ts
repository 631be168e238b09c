import { Cluster, type ClusterOptions, Redis, type RedisOptions } from 'ioredis';
import { clusterTag } from './catalog';

/** A connection to one Redis (or a master behind Sentinel), or to a Redis Cluster. */
export type RedisClient = Redis | Cluster;

type Address = { host: string; port: number };

/**
 * Where Redis is: a URL (`REDIS_URL`), or a Redis Cluster by some of its nodes (`REDIS_CLUSTER_NODES`), or a
 * master behind Sentinel (`REDIS_SENTINELS`, `REDIS_SENTINEL_NAME`). The URL's password, user and TLS apply to
 * the cluster's nodes and the sentinel's master too.
 */
export type RedisTarget = {
  url: string;
  clusterNodes?: Address[] | undefined;
  sentinels?: Address[] | undefined;
  sentinelName?: string | undefined;
};

/** The target the settings name (`REDIS_CLUSTER_NODES` wins, then `REDIS_SENTINELS`, then `REDIS_URL`). */
export function redisTarget(config: {
  REDIS_URL: string;
  REDIS_CLUSTER_NODES?: Address[] | undefined;
  REDIS_SENTINELS?: Address[] | undefined;
  REDIS_SENTINEL_NAME?: string | undefined;
}): RedisTarget {
  return {
    url: config.REDIS_URL,
    clusterNodes: config.REDIS_CLUSTER_NODES,
    sentinels: config.REDIS_SENTINELS,
    sentinelName: config.REDIS_SENTINEL_NAME,
  };
}

/** The URL's credentials and TLS, as ioredis options. */
function fromUrl(url: string): RedisOptions {
  const u = new URL(url);
  return {
    ...(u.username ? { username: decodeURIComponent(u.username) } : {}),
    ...(u.password ? { password: decodeURIComponent(u.password) } : {}),
    ...(u.protocol === 'rediss:' ? { tls: {} } : {}),
  };
}

/** Options that belong to the cluster client rather than to each node's connection. */
const CLUSTER_LEVEL = [
  'enableOfflineQueue',
  'enableAutoPipelining',
  'autoPipeliningIgnoredCommands',
  'enableReadyCheck',
  'lazyConnect',
] as const;

/**
 * A Redis connection as BullMQ wants it: commands wait (no per-request retry limit) while Redis reconnects,
 * so a blip delays work instead of failing it. A Cluster's client follows its slots (MOVED, ASK) and a master
 * failing over to its replica; Sentinel's asks the sentinels for the master, again after a failover.
 */
export function createRedis(
  target: RedisTarget | string,
  opts: RedisOptions = {},
  clusterOpts: ClusterOptions = {},
): RedisClient {
  const t = typeof target === 'string' ? { url: target } : target;
  const base: RedisOptions = { maxRetriesPerRequest: null, enableReadyCheck: true, ...opts };
  if (t.clusterNodes && t.clusterNodes.length > 0) {
    const redisOptions: RedisOptions = { ...fromUrl(t.url), ...base };
    const clusterLevel: Record<string, unknown> = {};
    for (const name of CLUSTER_LEVEL) {
      if (name in redisOptions) {
        clusterLevel[name] = redisOptions[name];
        delete redisOptions[name];
      }
    }
    return new Cluster(t.clusterNodes, {
      ...clusterLevel,
      redisOptions,
      // While a master fails over, commands wait for the new slot map instead of failing.
      retryDelayOnFailover: 200,
      retryDelayOnClusterDown: 300,
      retryDelayOnTryAgain: 200,
      slotsRefreshTimeout: 2000,
      clusterRetryStrategy: (n) => Math.min(100 * 2 ** n, 2000),
      ...clusterOpts,
    });
  }
  if (t.sentinels && t.sentinels.length > 0) {
    return new Redis({
      ...fromUrl(t.url),
      ...base,
      sentinels: t.sentinels,
      name: t.sentinelName ?? 'mymaster',
      // Listens to the sentinels' +switch-master: a failover moves the connection at once, not on its next error.
      failoverDetector: true,
    });
  }
  return new Redis(t.url, base);
}

/**
 * The BullMQ prefix of `queue`'s keys: the settings' prefix on one Redis; on a Redis Cluster, the prefix and the
 * queue in a hash tag (`{stampcard:loyalty-actions}`), so each queue's keys lie in one slot (BullMQ's scripts
 * need that) and the queues spread over the cluster's masters.
 */
export function queuePrefix(prefix: string, queue: string, connection: RedisClient): string {
  return connection.isCluster ? clusterTag(prefix, queue) : prefix;
}

/** Resolves once the connection is ready (needed before use when the offline queue is off). */
export function redisReady(redis: RedisClient, timeoutMs = 5000): Promise<void> {
  if (redis.status === 'ready') return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`Redis not ready after ${timeoutMs} ms`));
    }, timeoutMs);
    const onReady = () => {
      cleanup();
      resolve();
    };
    const cleanup = () => {
      clearTimeout(timer);
      redis.off('ready', onReady);
    };
    redis.on('ready', onReady);
  });
}

/**
 * Warns when Redis may evict keys under memory pressure: queued jobs, rate-limit windows and leases would
 * vanish silently. Redis must run with `maxmemory-policy noeviction` (the Compose file sets it). A Redis that
 * refuses `CONFIG GET` (some managed services do) is not checked, and that is logged too.
 */
export async function warnOnEvictionPolicy(
  redis: RedisClient,
  logger: { warn(obj: object, msg: string): void },
): Promise<string | null> {
  try {
    const reply = (await redis.config('GET', 'maxmemory-policy')) as string[];
    const policy = reply[1] ?? null;
    if (policy !== null && policy !== 'noeviction') {
      logger.warn(
        { maxmemoryPolicy: policy },
        'Redis maxmemory-policy is not noeviction: under memory pressure Redis may drop queued jobs and rate-limit state; set maxmemory-policy noeviction',
      );
    }
    return policy;
  } catch (err) {
    logger.warn(
      { err },
      'Redis maxmemory-policy could not be read (CONFIG GET refused); it must be noeviction',
    );
    return null;
  }
}

/**
 * A second connection like `redis` (a subscriber, say), with `opts` on top: for a Cluster, a client of the
 * same nodes whose node connections take `opts`.
 */
export function duplicateRedis(redis: RedisClient, opts: RedisOptions = {}): RedisClient {
  if (!redis.isCluster) return (redis as Redis).duplicate(opts);
  const cluster = redis as Cluster;
  const redisOptions: RedisOptions = { ...cluster.options.redisOptions, ...opts };
  const clusterLevel: Record<string, unknown> = {};
  for (const name of CLUSTER_LEVEL) {
    if (name in opts) {
      clusterLevel[name] = opts[name];
      delete redisOptions[name];
    }
  }
  return cluster.duplicate(undefined, { ...cluster.options, ...clusterLevel, redisOptions });
}
