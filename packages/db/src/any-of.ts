import { type Column, Placeholder, type SQL, sql } from 'drizzle-orm';

/**
 * `column = any($1::text[])`: one array parameter, so the statement's text is the same whatever the number of
 * values and PostgreSQL reuses its prepared plan (`inArray` writes `in ($1, …, $n)`, a new statement for
 * every n). The values, or a placeholder for a statement built once (`builtOnce`).
 */
export function anyOf(column: Column, values: readonly string[] | Placeholder): SQL {
  return sql`${column} = any(${values instanceof Placeholder ? values : sql.param([...values])}::text[])`;
}

/**
 * `column = any($1::timestamptz[])`, the same for times: a partition key's values, for PostgreSQL to prune by.
 * A placeholder is filled with the times as ISO strings.
 */
export function anyTime(column: Column, values: readonly Date[] | Placeholder): SQL {
  const param = values instanceof Placeholder ? values : sql.param(values.map((v) => v.toISOString()));
  return sql`${column} = any(${param}::text[]::timestamptz[])`;
}
