import { randomBytes } from 'node:crypto';
import { connectPostgres, createDb, type DbHandle, runMigrations } from '@stampcard/db';
import { Redis } from 'ioredis';
import type postgres from 'postgres';
import { progress } from './util';

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

/** The PostgreSQL the benches create their databases on (`BENCH_DATABASE_URL`). */
export const benchAdminUrl = (): string =>
  process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/**
 * Runs `measure` on a database of its own, `<prefix>_<8 hex>`: created and migrated first, dropped at the end,
 * on failure and on SIGINT or SIGTERM too. `measure` gets a pool of two connections with a 10-minute statement
 * timeout (seeding is slow), and the database's URL for anything else it starts.
 */
export async function withScratchDatabase(
  prefix: string,
  measure: (db: DbHandle, url: string) => Promise<void>,
): Promise<void> {
  const adminUrl = benchAdminUrl();
  const name = `${prefix}_${randomBytes(4).toString('hex')}`;
  const url = databaseUrl(adminUrl, name);
  let dropped = false;
  const drop = async () => {
    if (dropped) return;
    dropped = true;
    await dropDatabase(adminUrl, name).catch((err: Error) => progress(`drop ${name} failed: ${err.message}`));
  };
  const onSignal = (signal: NodeJS.Signals) => {
    progress(`${signal}: dropping ${name}`);
    void drop().finally(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  progress(`database ${name}: creating and migrating`);
  await createDatabase(adminUrl, name);
  try {
    await runMigrations(url);
    const db = createDb(url, { max: 2, statementTimeoutMs: 600_000 });
    try {
      await measure(db, url);
    } finally {
      await db.close();
    }
  } finally {
    await drop();
    progress(`database ${name} dropped`);
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}
