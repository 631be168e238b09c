import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { drizzle } from 'drizzle-orm/postgres-js';
import { migrate } from 'drizzle-orm/postgres-js/migrator';
import { connectPostgres } from './connect';

export const migrationsFolder = fileURLToPath(new URL('../drizzle', import.meta.url));

/** Creates the database named in `url` when it does not exist yet (a fresh local server has none). */
export async function ensureDatabase(url: string): Promise<void> {
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.replace(/^\//, ''));
  if (!name) return;
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const sql = connectPostgres(admin.toString(), { max: 1, onnotice: () => {} });
  try {
    const rows = await sql`select 1 from pg_database where datname = ${name}`;
    if (rows.length === 0) {
      await sql.unsafe(`create database "${name.replaceAll('"', '""')}"`).catch((err: { code?: string }) => {
        // Two processes starting at once: the other one created it.
        if (err.code !== '42P04' && err.code !== '23505') throw err;
      });
    }
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/**
 * A copy of the migrations folder whose journal stops before migration `tag` (its file name without `.sql`), in
 * a temporary folder: a database migrated from it is one of an earlier release (upgrade tests and benches).
 */
export function migrationsBefore(tag: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'stampcard-migrations-'));
  cpSync(migrationsFolder, dir, { recursive: true });
  const journalPath = join(dir, 'meta', '_journal.json');
  const journal = JSON.parse(readFileSync(journalPath, 'utf8'));
  const at = journal.entries.findIndex((e: { tag: string }) => e.tag === tag);
  if (at < 0) throw new Error(`no migration ${tag}`);
  journal.entries = journal.entries.slice(0, at);
  writeFileSync(journalPath, JSON.stringify(journal));
  return dir;
}

/**
 * Applies the committed migrations; safe to run on every start (already applied ones are skipped).
 * @param folder - the migrations to apply
 * @defaultValue folder - every committed migration (`migrationsFolder`)
 */
export async function runMigrations(url: string, folder = migrationsFolder): Promise<void> {
  await ensureDatabase(url);
  const sql = connectPostgres(url, { max: 1, onnotice: () => {} });
  try {
    await migrate(drizzle(sql), { migrationsFolder: folder });
  } finally {
    await sql.end({ timeout: 5 });
  }
}
