import type postgres from 'postgres';

/**
 * How many distinct statement texts a pool prepares (`preparing`). The service's statements are a bounded
 * set of texts (a list goes as one array parameter), well under this; a text past it goes unprepared.
 */
export const PREPARED_TEXTS_MAX = 500;

type Unsafe = (query: string, params?: unknown[], options?: { prepare?: boolean }) => unknown;
type Begin = (...args: unknown[]) => unknown;

/**
 * The pool as drizzle is given it, with every statement prepared (up to `max` distinct texts).
 *
 * drizzle sends a statement that has no name of its own with `prepare: false`. postgres.js then needs the
 * parameters' types before it can send their values, so it asks for them first (Parse, Describe, Flush), waits
 * for PostgreSQL's answer, and only then binds and executes: two round trips and two writes for every
 * statement with a parameter, and a parse and a plan each time. Prepared, a statement's text is parsed once
 * per connection and each later run is one round trip (Bind, Execute). PostgreSQL plans it as it does any
 * prepared statement (`plan_cache_mode`).
 *
 * The first `max` distinct texts are prepared, and the rest go as before, so that neither postgres.js's cache
 * of statements nor a server connection's grows without bound whatever the text of a statement built at run
 * time (a console filter, an `in (…)` list). Transactions and savepoints opened through it prepare alike.
 */
export function preparing<T extends postgres.Sql>(
  sql: T,
  max = PREPARED_TEXTS_MAX,
  texts: Set<string> = new Set(),
): T {
  const prepare = (query: string) => {
    if (texts.has(query)) return true;
    if (texts.size >= max) return false;
    texts.add(query);
    return true;
  };
  // `begin(options?, fn)` and `savepoint(name?, fn)`: the callback's own handle prepares too.
  const wrapBlock =
    (open: Begin): Begin =>
    (...args) => {
      const fn = args.at(-1) as (inner: postgres.Sql) => unknown;
      return open(...args.slice(0, -1), (inner: postgres.Sql) => fn(preparing(inner, max, texts)));
    };
  return new Proxy(sql, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (prop === 'unsafe') {
        const unsafe = (value as Unsafe).bind(target);
        return (query: string, params?: unknown[], options: { prepare?: boolean } = {}) =>
          unsafe(query, params, { ...options, prepare: options.prepare === true || prepare(query) });
      }
      if ((prop === 'begin' || prop === 'savepoint') && typeof value === 'function')
        return wrapBlock((value as Begin).bind(target));
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
