import { drizzle, type PostgresJsDatabase } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import * as schema from './schema/index';

export type Schema = typeof schema;
export type Database = PostgresJsDatabase<Schema>;
/** A database handle or an open transaction: query functions accept either. */
export type Tx = Database | Parameters<Parameters<Database['transaction']>[0]>[0];

export type DbHandle = { db: Database; sql: postgres.Sql; close: () => Promise<void> };

export type CreateDbOptions = {
  /** Pool size. Default 10. */
  max?: number;
};

export function createDb(url: string, opts: CreateDbOptions = {}): DbHandle {
  const sql = postgres(url, {
    max: opts.max ?? 10,
    onnotice: () => {},
  });
  const db = drizzle(sql, { schema });
  return { db, sql, close: () => sql.end({ timeout: 5 }) };
}
