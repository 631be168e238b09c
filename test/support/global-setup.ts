import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { runMigrations } from '@stampcard/db';
import postgres from 'postgres';
import type { TestProject } from 'vitest/node';
import { startPgBouncer } from './pgbouncer';
import { startRedisCluster } from './redis-cluster';

const BASE = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/**
 * `TEST_STORES`: the stores every test stack runs on, comma-separated: `cluster` (a Redis Cluster of the run's
 * own, three masters with a replica each) and `pgbouncer` (Debian's PgBouncer in transaction mode in front of
 * each test database). Unset: the local Redis and PostgreSQL themselves.
 */
const STORES = new Set((process.env.TEST_STORES ?? '').split(',').filter(Boolean));
for (const s of STORES) {
  if (s !== 'cluster' && s !== 'pgbouncer')
    throw new Error(`TEST_STORES: unknown store "${s}" (cluster, pgbouncer)`);
}

/**
 * Migrates a template database once per run; each test file then clones it (`CREATE DATABASE … TEMPLATE`),
 * which takes milliseconds, so files never share rows and can run in parallel. Starts the stores `TEST_STORES`
 * names, for the whole run.
 */
export default async function setup(project: TestProject) {
  build();
  const name = `stampcard_tpl_${randomBytes(4).toString('hex')}`;
  const url = new URL(BASE);
  url.pathname = `/${name}`;
  await runMigrations(url.toString());
  project.provide('templateDatabase', name);
  project.provide('baseDatabaseUrl', BASE);
  const cluster = STORES.has('cluster') ? await startRedisCluster() : null;
  const pooler = STORES.has('pgbouncer') ? await startPgBouncer() : null;
  project.provide('redisClusterNodes', cluster?.nodes ?? '');
  project.provide('poolerUrl', pooler?.urlFor('DATABASE') ?? '');
  return async () => {
    await cluster?.stop();
    await pooler?.stop();
    const sql = postgres(BASE, { max: 1, onnotice: () => {} });
    await sql.unsafe(`drop database if exists "${name}" with (force)`);
    const stale =
      await sql`select datname from pg_database where datname like 'stampcard_t_%' and datname <> ${name}`;
    for (const { datname } of stale) {
      if (String(datname).startsWith(`stampcard_t_${name.slice(-8)}`)) {
        await sql.unsafe(`drop database if exists "${datname}" with (force)`);
      }
    }
    await sql.end();
  };
}

/**
 * `npm run build` (turbo: a few seconds, nothing when no source changed), once before any file runs, for the
 * tests that run the built JavaScript as `npm start` and the image do (`startBuilt`).
 */
function build() {
  try {
    execFileSync('npm', ['run', 'build', '--silent'], {
      cwd: fileURLToPath(new URL('../..', import.meta.url)),
      stdio: 'pipe',
    });
  } catch (err) {
    const { stdout, stderr } = err as { stdout?: Buffer; stderr?: Buffer };
    throw new Error(`npm run build failed:\n${stdout ?? ''}${stderr ?? ''}`);
  }
}

declare module 'vitest' {
  export interface ProvidedContext {
    templateDatabase: string;
    baseDatabaseUrl: string;
    /** `TEST_STORES=cluster`: the run's Redis Cluster, as `REDIS_CLUSTER_NODES` takes it; '' otherwise. */
    redisClusterNodes: string;
    /** `TEST_STORES=pgbouncer`: the run's PgBouncer, `DATABASE` standing for the test's database; '' otherwise. */
    poolerUrl: string;
  }
}
