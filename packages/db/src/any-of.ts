import { type Column, type SQL, sql } from 'drizzle-orm';

/**
 * `column = any($1::text[])`: one array parameter, so the statement's text is the same whatever the number of
 * values and PostgreSQL reuses its prepared plan (`inArray` writes `in ($1, …, $n)`, a new statement for
 * every n).
 */
export function anyOf(column: Column, values: readonly string[]): SQL {
  return sql`${column} = any(${sql.param([...values])}::text[])`;
}

/** `column = any($1::timestamptz[])`, the same for times: a partition key's values, for PostgreSQL to prune by. */
export function anyTime(column: Column, values: readonly Date[]): SQL {
  return sql`${column} = any(${sql.param(values.map((v) => v.toISOString()))}::text[]::timestamptz[])`;
}
