import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { PARTITIONED_TABLES } from '@stampcard/db';

const run = promisify(execFile);

/**
 * Every row of a test's own database, as `pg_dump --data-only` writes it, by table: what an attacker with a
 * copy of the database (a backup, a dump, a replica) would read. Tests search it for what must not be stored.
 */
export async function dumpDatabase(url: string): Promise<Map<string, string>> {
  const { stdout } = await run('pg_dump', ['--data-only', '--no-owner', '--dbname', url], {
    maxBuffer: 512 * 1024 * 1024,
    timeout: 60_000,
  });
  const tables = new Map<string, string>();
  let table: string | null = null;
  let rows: string[] = [];
  for (const line of stdout.split('\n')) {
    const copy = /^COPY public\.(\S+) /.exec(line);
    if (copy) {
      table = copy[1]!;
      rows = [];
    } else if (table !== null && line === '\\.') {
      // A partition's rows are its table's (events_legacy, events_20261130: events).
      const name = partitionOf(table) ?? table;
      tables.set(name, [tables.get(name), rows.join('\n')].filter(Boolean).join('\n'));
      table = null;
    } else if (table !== null) rows.push(line);
  }
  if (tables.size === 0) throw new Error('pg_dump wrote no table: is this the test database?');
  return tables;
}

const PARTITION = new RegExp(`^(${Object.keys(PARTITIONED_TABLES).join('|')})_(legacy|\\d{6}|\\d{8})$`);
const partitionOf = (name: string) => PARTITION.exec(name)?.[1] ?? null;

/** The tables of a dump in which `needle` occurs (case-sensitive, as stored). */
export function tablesHolding(dump: Map<string, string>, needle: string): string[] {
  return [...dump].filter(([, rows]) => rows.includes(needle)).map(([name]) => name);
}
