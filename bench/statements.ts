import type postgres from 'postgres';
import { round } from './util';

/**
 * PostgreSQL's own account of each figure (`npm run bench -- --statements`): what the run's database executed
 * while the figure was measured, its baselines and set-up included but not the bench's VACUUM and CHECKPOINT
 * between phases, from `pg_stat_statements`, the statements that took the most time first. Only this database's
 * statistics are reset and read, so a server shared with other work keeps its own. Statement texts are PostgreSQL's normalised ones (`$1` for every value): no value a
 * request carried is in them.
 */

/** One normalised statement over a figure. */
export type StatementRow = {
  /** Whitespace folded, cut to `TEXT_MAX` characters. */
  query: string;
  calls: number;
  totalMs: number;
  meanMs: number;
  rows: number;
  /** Of the time every statement of the figure took, 0 to 1. */
  share: number;
};

/** A figure's statements: the top ones, and the whole figure's calls and time. */
export type FigureStatements = { top: StatementRow[]; calls: number; totalMs: number };

/** How much of a statement's text is kept. */
export const TEXT_MAX = 160;
/** How many statements a figure lists. */
export const TOP = 8;

/** How to load the extension, for the message of a run that asked for it where it is not loaded. */
export const HOW_TO_LOAD =
  "add shared_preload_libraries = 'pg_stat_statements' to postgresql.conf (or ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements') and restart PostgreSQL";

/** A statement's text on one line, at most `TEXT_MAX` characters. */
export function foldQuery(text: string): string {
  const folded = text.replace(/\s+/g, ' ').trim();
  return folded.length > TEXT_MAX ? `${folded.slice(0, TEXT_MAX - 1)}…` : folded;
}

/**
 * Readies `pg_stat_statements` in the database `sql` is connected to (the extension created there): null when it
 * can be read, else why not (the library is not preloaded, or the extension is not installed).
 */
export async function statementsUnavailable(sql: postgres.Sql): Promise<string | null> {
  try {
    await sql`create extension if not exists pg_stat_statements`;
    await sql`select 1 from pg_stat_statements limit 1`;
    return null;
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    return `pg_stat_statements cannot be read (${message.slice(0, 120)}): ${HOW_TO_LOAD}`;
  }
}

const thisDatabase = (sql: postgres.Sql) =>
  sql`(select oid from pg_database where datname = current_database())`;

/** Forgets what this database's statements did so far (other databases' statistics are kept). */
export async function resetStatements(sql: postgres.Sql): Promise<void> {
  await sql`select pg_stat_statements_reset(0, ${thisDatabase(sql)}, 0)`;
}

/** The bench's own settle between phases (bench/settle.ts), which the service never runs: left out. */
const SETTLE = '^\\s*(vacuum|checkpoint)\\M';

/** This database's statements since the last reset (the bench's settle left out): the `top` that took the most time, and the totals. */
export async function readStatements(sql: postgres.Sql, top = TOP): Promise<FigureStatements> {
  const rows = await sql<{ query: string; calls: string; total_ms: number; rows: string }[]>`
    select query, calls::text, total_exec_time as total_ms, rows::text
    from pg_stat_statements
    where dbid = ${thisDatabase(sql)} and query !~* ${SETTLE}`;
  const totalMs = rows.reduce((n, r) => n + r.total_ms, 0);
  const calls = rows.reduce((n, r) => n + Number(r.calls), 0);
  const listed = rows
    .sort((a, b) => b.total_ms - a.total_ms)
    .slice(0, top)
    .map((r) => ({
      query: foldQuery(r.query),
      calls: Number(r.calls),
      totalMs: round(r.total_ms, 3),
      meanMs: round(r.total_ms / Math.max(1, Number(r.calls)), 3),
      rows: Number(r.rows),
      share: totalMs > 0 ? round(r.total_ms / totalMs, 3) : 0,
    }));
  return { top: listed, calls, totalMs: round(totalMs, 3) };
}

/** A figure's statements as lines for the terminal. */
export function statementLines(figure: string, s: FigureStatements): string[] {
  return [
    `statements during ${figure}: ${s.calls} calls, ${Math.round(s.totalMs)} ms executing`,
    ...s.top.map(
      (r) =>
        `  ${(r.share * 100).toFixed(1).padStart(5)} %  ${String(r.calls).padStart(7)} calls  ${r.meanMs.toFixed(3).padStart(8)} ms  ${r.query}`,
    ),
  ];
}
