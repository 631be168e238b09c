import { type Column, fillPlaceholders, getTableColumns, is, type Query, SQL, type Table } from 'drizzle-orm';
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
  const query = rendered(statement);
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

export type BuiltOnce = ReturnType<typeof builtOnce>;

/** A statement's text and parameters: one written with drizzle's `sql`, or a query builder's own. */
function rendered(statement: SQL | { toSQL(): Query }): Query {
  return is(statement, SQL) ? DIALECT.sqlToQuery(statement) : statement.toSQL();
}

/** A column's value as drizzle would give it (a Date for a timestamp, a number for a bigint in number mode). */
export function decoded(column: Column, value: unknown): unknown {
  return value === null ? null : column.mapFromDriverValue(value);
}

/** The connection a transaction holds: statements sent through a pool may go to several, in no order. */
function transactionClient(db: Tx): postgres.Sql {
  if ('$client' in db) throw new Error('statements sent together must run in a transaction (db.transaction)');
  return clientOf(db);
}

/**
 * Runs `statements` on the connection a transaction holds, sent together and in the order given: one round
 * trip for all (one write, or several when a statement is 1 KB or more: postgres.js writes those at once),
 * where awaiting each would take one each. PostgreSQL runs them in that order, so row
 * locks are taken in it as they would be one after another. Each is handed to postgres.js (`execute()`) in
 * turn, in the same turn of the event loop, and postgres.js writes them as it is handed them; a drizzle query
 * awaited in a `Promise.all` would be sent after a number of microtasks of its own, in an order that depends on
 * drizzle's code. When one fails, those after it fail too (the transaction is aborted), and the first one's
 * error is the one that rejects. Statements whose rows are not needed.
 */
export async function inOrder(db: Tx, statements: readonly (SQL | { toSQL(): Query })[]): Promise<void> {
  const client = transactionClient(db);
  const sent = statements.map((statement) => {
    const query = rendered(statement);
    return client.unsafe(query.sql, query.params as never[]).execute();
  });
  await Promise.all(sent);
}

/**
 * Runs statements built once (`builtOnce`), each with its values, sent together and in the order given, as
 * `inOrder` does: one round trip for all, the locks taken in that order. Answers each one's rows,
 * as `builtOnce`'s `rows` does.
 */
export function rowsInOrder(
  db: Tx,
  runs: readonly { statement: BuiltOnce; values: Record<string, unknown> }[],
): Promise<unknown[][][]> {
  const client = transactionClient(db);
  return Promise.all(
    runs.map(
      ({ statement, values }) =>
        client.unsafe(statement.text, statement.params(values)).values().execute() as unknown as Promise<
          unknown[][]
        >,
    ),
  );
}

/**
 * The rows of a `select()` of all of `table`'s columns (a statement built once), as drizzle maps them: each an
 * object keyed by the schema's column names, each value decoded by its column (`decoded`).
 */
export function tableRows<T extends Table>(table: T, rows: unknown[][]): T['$inferSelect'][] {
  const columns = Object.entries(getTableColumns(table));
  return rows.map((row) => {
    const out: Record<string, unknown> = {};
    for (let i = 0; i < columns.length; i++) out[columns[i]![0]] = decoded(columns[i]![1], row[i]);
    return out as T['$inferSelect'];
  });
}
