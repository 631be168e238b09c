import { connectPostgres } from '@stampcard/db';
import { Redis } from 'ioredis';
import type postgres from 'postgres';

/** `adminUrl` with its database replaced by `name`. */
export function databaseUrl(adminUrl: string, name: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

async function withAdmin<T>(adminUrl: string, run: (sql: postgres.Sql) => Promise<T>): Promise<T> {
  const sql = connectPostgres(adminUrl, { max: 1, onnotice: () => {}, connect_timeout: 5 });
  try {
    return await run(sql);
  } finally {
    await sql.end({ timeout: 5 });
  }
}

export function createDatabase(adminUrl: string, name: string): Promise<void> {
  return withAdmin(adminUrl, async (sql) => void (await sql.unsafe(`create database "${name}"`)));
}

export function dropDatabase(adminUrl: string, name: string): Promise<void> {
  return withAdmin(
    adminUrl,
    async (sql) => void (await sql.unsafe(`drop database if exists "${name}" with (force)`)),
  );
}

/** PostgreSQL's version string, e.g. `PostgreSQL 15.20 (Debian …)`. */
export function postgresVersion(adminUrl: string): Promise<string> {
  return withAdmin(adminUrl, async (sql) => (await sql`select version() as v`)[0]!.v as string);
}

/** Redis's version, from INFO. */
export async function redisVersion(redisUrl: string): Promise<string> {
  const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
    return /redis_version:(\S+)/.exec(await redis.info('server'))?.[1] ?? 'unknown';
  } finally {
    redis.disconnect();
  }
}

/** Deletes every key under `prefix:` (SCAN, never KEYS); answers how many. */
export async function deleteRedisKeys(redisUrl: string, prefix: string): Promise<number> {
  const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  let deleted = 0;
  try {
    await redis.connect();
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) deleted += await redis.unlink(...keys);
    } while (cursor !== '0');
    return deleted;
  } finally {
    redis.disconnect();
  }
}
