import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { runMigrations } from '@stampcard/db';
import postgres from 'postgres';
import type { TestProject } from 'vitest/node';

const BASE = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/**
 * Migrates a template database once per run; each test file then clones it (`CREATE DATABASE … TEMPLATE`),
 * which takes milliseconds, so files never share rows and can run in parallel.
 */
export default async function setup(project: TestProject) {
  build();
  const name = `stampcard_tpl_${randomBytes(4).toString('hex')}`;
  const url = new URL(BASE);
  url.pathname = `/${name}`;
  await runMigrations(url.toString());
  project.provide('templateDatabase', name);
  project.provide('baseDatabaseUrl', BASE);
  return async () => {
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
  }
}
