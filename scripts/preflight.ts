import { connectPostgres } from '@stampcard/db';
import { createRedis, type RedisTarget } from '@stampcard/jobs';

function where(url: string): string {
  const u = new URL(url);
  const socket = u.searchParams.get('host');
  if (socket?.startsWith('/')) return `${socket}/.s.PGSQL.${u.port || 5432}`;
  return `${u.hostname}:${u.port || (u.protocol.startsWith('redis') ? 6379 : 5432)}`;
}

/** Where Redis was looked for: the cluster's nodes, the sentinels, or the URL's host. */
function redisWhere(target: RedisTarget): string {
  const list = target.clusterNodes ?? target.sentinels;
  if (list && list.length > 0) return list.map((a) => `${a.host}:${a.port}`).join(',');
  return where(target.url);
}

/**
 * Checks that PostgreSQL and Redis answer before anything starts, and says how to start the missing one,
 * instead of a stack trace from deep inside a driver.
 */
export async function preflight(databaseUrl: string, target: RedisTarget): Promise<string[]> {
  const problems: string[] = [];
  const admin = new URL(databaseUrl);
  admin.pathname = '/postgres';
  const sql = connectPostgres(admin.toString(), { max: 1, connect_timeout: 3, onnotice: () => {} });
  try {
    await sql`select 1`;
  } catch (err) {
    problems.push(
      `PostgreSQL is not reachable at ${where(databaseUrl)} (${(err as Error).message}).\n` +
        '  Start it with `docker compose up -d postgres`, or on Debian `pg_ctlcluster 15 main start`,\n' +
        '  or point DATABASE_URL at a running server.',
    );
  } finally {
    await sql.end({ timeout: 1 }).catch(() => {});
  }
  const redis = createRedis(target, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: 3000,
  });
  redis.on('error', () => {});
  try {
    await redis.connect();
    await redis.ping();
    const policy = (await redis.config('GET', 'maxmemory-policy').catch(() => [])) as string[];
    if (policy[1] && policy[1] !== 'noeviction') {
      console.warn(
        `warning: Redis maxmemory-policy is ${policy[1]}; use noeviction so queued jobs are never evicted`,
      );
    }
  } catch (err) {
    problems.push(
      `Redis is not reachable at ${redisWhere(target)} (${(err as Error).message}).\n` +
        '  Start it with `docker compose up -d redis`, or `redis-server --daemonize yes`,\n' +
        '  or point REDIS_URL at a running server.',
    );
  } finally {
    redis.disconnect();
  }
  return problems;
}
