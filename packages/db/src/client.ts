import { drizzle, type PostgresJsDatabase } from 'drizzle-orm/postgres-js';
import type postgres from 'postgres';
import { connectPostgres } from './connect';
import { preparing } from './prepared';
import * as schema from './schema/index';

export type Schema = typeof schema;
/** The pool behind it too (`$client`), for what drizzle cannot send: statements pipelined in one transaction. */
export type Database = PostgresJsDatabase<Schema> & { $client: postgres.Sql };
/** A database handle or an open transaction: query functions accept either. */
export type Tx = Database | Parameters<Parameters<Database['transaction']>[0]>[0];

export type DbHandle = { db: Database; sql: postgres.Sql; close: () => Promise<void> };

export type CreateDbOptions = {
  /**
   * Pool size.
   * @defaultValue 10
   */
  max?: number;
  /**
   * Longest a statement may run, or wait for a lock, before PostgreSQL cancels it (SQLSTATE 57014 or
   * 55P03, which the API answers with 503).
   * @defaultValue 3000
   */
  statementTimeoutMs?: number;
  /**
   * Longest to wait for a new connection to open, in seconds.
   * @defaultValue 5
   */
  connectTimeoutSeconds?: number;
  /**
   * A session left idle inside a transaction this long is ended by PostgreSQL, releasing its row locks (a
   * process frozen or cut off mid-transaction cannot hold hot rows for longer).
   * @defaultValue 10000
   */
  idleInTransactionTimeoutMs?: number;
  /**
   * Longest a closed connection waits before its next attempt to reconnect, in ms. postgres.js backs off by
   * 3^n / 100 s for n failures counted across the whole pool, up to 20 s: after an outage of a few seconds its
   * connections came back one by one over the next ten or more, and the service stalled in waves after the
   * database was back. Attempts here back off from 50 ms, doubling, up to this cap (with jitter).
   * @defaultValue 1000
   */
  reconnectMaxMs?: number;
  /**
   * `transaction`: the URL is a pooler in transaction mode (PgBouncer). Statements are not prepared (a prepared
   * statement lives on one server connection, which the next transaction may not get) and no session setting is
   * sent at connect (PgBouncer refuses them): the role's own settings bound statements, locks and idle
   * transactions instead (docs/scaling.md).
   * @defaultValue none
   */
  pooler?: 'none' | 'transaction';
};

/** The wait before reconnect attempt `n` (seconds, as postgres.js takes it): 50 ms doubling to `capMs`, jittered. */
export function reconnectBackoff(capMs: number) {
  return (n: number) => (Math.min(50 * 2 ** n, capMs) * (0.5 + Math.random() / 2)) / 1000;
}

/**
 * A pool whose every wait is bounded on the server side: statements, lock waits and idle transactions.
 * The driver has no pool-acquire timeout; callers bound that wait with a deadline of their own (the API's
 * request deadline).
 */
export function createDb(url: string, opts: CreateDbOptions = {}): DbHandle {
  const statementTimeout = opts.statementTimeoutMs ?? 3000;
  const pooled = opts.pooler === 'transaction';
  const sql = connectPostgres(url, {
    max: opts.max ?? 10,
    connect_timeout: opts.connectTimeoutSeconds ?? 5,
    onnotice: () => {},
    backoff: reconnectBackoff(opts.reconnectMaxMs ?? 1000),
    ...(pooled
      ? { prepare: false }
      : {
          connection: {
            statement_timeout: statementTimeout,
            lock_timeout: statementTimeout,
            idle_in_transaction_session_timeout: opts.idleInTransactionTimeoutMs ?? 10_000,
          },
        }),
  });
  // Behind a pooler in transaction mode nothing is prepared (see `pooler`).
  const db = drizzle(pooled ? sql : preparing(sql), { schema });
  return { db, sql, close: () => sql.end({ timeout: 5 }) };
}
