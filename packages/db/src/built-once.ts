import { type Column, fillPlaceholders, is, type Query, SQL } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import type postgres from 'postgres';
import type { Tx } from './client';

/**
 * The postgres.js handle under a drizzle database or transaction: the pool (`$client`), or the connection a
 * transaction holds (drizzle gives a transaction no `$client` of its own).
 */
export function clientOf(db: Tx): postgres.Sql {
  if ('$client' in db) return db.$client;
  return (db as unknown as { session: { client: postgres.Sql } }).session.client;
}

/** Renders a statement written with drizzle's `sql` (a query builder renders itself). */
const DIALECT = new PgDialect();

/**
 * A statement drizzle builds once, from the schema, with its values as named placeholders (`sql.placeholder`),
 * run as often as asked with the values filled in. A statement on a hot path built by drizzle at every run
 * (its chunks walked, each checked for its kind) and its rows mapped to objects cost the dispatcher a tenth of
 * its time; this one's text is a constant (prepared like any other by the pool) and its rows come back as
 * arrays, in the order of its select list, for the caller to decode (`decoded`).
 */
export function builtOnce(statement: SQL | { toSQL(): Query }) {
  const query = is(statement, SQL) ? DIALECT.sqlToQuery(statement) : statement.toSQL();
  /** Its parameters, for `values` (every placeholder named). */
  const params = (values: Record<string, unknown>) => fillPlaceholders(query.params, values) as never[];
  return {
    /** The statement's text. */
    text: query.sql,
    params,
    /** Runs it with `values`: its rows, each an array of its columns' values as the driver gives them. */
    rows: (db: Tx, values: Record<string, unknown>): Promise<unknown[][]> =>
      clientOf(db).unsafe(query.sql, params(values)).values() as Promise<unknown[][]>,
  };
}

/** A column's value as drizzle would give it (a Date for a timestamp, a number for a bigint in number mode). */
export function decoded(column: Column, value: unknown): unknown {
  return value === null ? null : column.mapFromDriverValue(value);
}
