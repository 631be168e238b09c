import { webhookAttempts, webhookMessages } from '@stampcard/db';
import {
  asc,
  type Column,
  getTableColumns,
  inArray,
  lte,
  or,
  type Placeholder,
  type SQL,
  type SQLWrapper,
  sql,
} from 'drizzle-orm';
import type { Ctx } from '../../context';
import { ATTEMPT_LOG_KEEP } from '../../rules/delivery';
import type { AttemptLog } from './views';

/**
 * The logs of some messages, in one statement. Each log is cut to its first and last `ATTEMPT_LOG_KEEP` here
 * too, whatever it holds, so an answer's size never depends on a receiver's behaviour.
 */
export async function attemptsOf(ctx: Ctx, ids: string[]): Promise<Map<string, AttemptLog>> {
  const logs = new Map<string, AttemptLog>(ids.map((id) => [id, { attempts: [], rows: 0 }]));
  if (ids.length === 0) return logs;
  const a = webhookAttempts;
  const ranked = ctx.db
    .select({
      ...getTableColumns(a),
      fromStart:
        sql<number>`row_number() over (partition by ${a.messageId} order by ${a.attemptedAt}, ${a.id})`.as(
          'from_start',
        ),
      fromEnd:
        sql<number>`row_number() over (partition by ${a.messageId} order by ${a.attemptedAt} desc, ${a.id} desc)`.as(
          'from_end',
        ),
      rows: sql<number>`count(*) over (partition by ${a.messageId})`.as('rows'),
    })
    .from(a)
    .where(inArray(a.messageId, ids))
    .as('ranked');
  const found = await ctx.db
    .select()
    .from(ranked)
    .where(or(lte(ranked.fromStart, ATTEMPT_LOG_KEEP), lte(ranked.fromEnd, ATTEMPT_LOG_KEEP)))
    .orderBy(asc(ranked.attemptedAt), asc(ranked.id));
  for (const { fromStart: _s, fromEnd: _e, rows, ...attempt } of found) {
    const log = logs.get(attempt.messageId)!;
    log.attempts.push(attempt);
    log.rows = Number(rows);
  }
  return logs;
}

/** What an attempt loads besides its answer's excerpt and error class: ids, time, codes, flags (about 150 bytes). */
const ATTEMPT_ROW_BYTES = 200;

/**
 * An upper bound of the bytes a message's attempt log loads (`attemptsOf`), for sizing a page of messages before
 * loading any (`pageWithinBudget`): every row its log holds, read through the (message, time, id) index. A log
 * keeps its first and last `ATTEMPT_LOG_KEEP` (20 rows); a longer one, recorded before logs were bounded, only
 * counts larger here than what `attemptsOf` shows of it.
 */
export const attemptLogBytes = (messageId: SQLWrapper): SQL => sql`(
  select coalesce(sum(${ATTEMPT_ROW_BYTES} + coalesce(octet_length(${webhookAttempts.responseExcerpt}), 0)
    + coalesce(octet_length(${webhookAttempts.errorClass}), 0)), 0)
  from ${webhookAttempts} where ${webhookAttempts.messageId} = ${messageId})`;

/**
 * A message's partition key as PostgreSQL takes it: a message made before partitioning holds `-infinity`, which
 * JavaScript reads as an invalid date.
 */
export const eventAtKey = (at: Date) => (Number.isNaN(at.getTime()) ? '-infinity' : at.toISOString());

/**
 * `event_at` within the milliseconds of `times` (messages' `eventAt` as read): JavaScript keeps milliseconds,
 * a row made by PostgreSQL's `now()` (a default) keeps microseconds, so a key read back is matched by its
 * millisecond, never by equality. A range, so PostgreSQL reads only the partitions it spans. No condition when
 * one of them holds `-infinity` (a message from before partitioning: its partition is found by its id).
 */
export function eventAtWithin(column: SQL | Column, times: readonly Date[]): SQL | undefined {
  const range = eventAtRange(times);
  return range && eventAtBetween(column, range.from, range.to);
}

/** The range `eventAtWithin` reads, `[from, to)` as ISO strings; undefined when it names none. */
export function eventAtRange(times: readonly Date[]): { from: string; to: string } | undefined {
  const ms = times.map((t) => t.getTime());
  if (ms.length === 0 || ms.some(Number.isNaN)) return undefined;
  return { from: new Date(Math.min(...ms)).toISOString(), to: new Date(Math.max(...ms) + 1).toISOString() };
}

/** `column` in `[from, to)`: values, or placeholders of a statement built once (`builtOnce`). */
export const eventAtBetween = (
  column: SQL | Column,
  from: string | Placeholder,
  to: string | Placeholder,
): SQL => sql`(${column} >= ${from}::timestamptz and ${column} < ${to}::timestamptz)`;

/** One attempt as `recordAttempt` writes it. */
export type AttemptInsert = {
  id: string;
  messageId: string;
  /** Its message's `event_at`: no attempt of it is older. */
  since: Date;
  endpointId: string;
  attemptedAt: Date;
  statusCode: number | null;
  latencyMs: number;
  responseExcerpt: string | null;
  errorClass: string | null;
  succeeded: boolean;
  throttled: boolean;
};

/**
 * Records an attempt and keeps its message's log bounded, in one statement: the rows between the first
 * `ATTEMPT_LOG_KEEP` and the last (this one among them) are deleted, and counted on the message. Read through
 * the (message, time, id) index; a log within the bound loses nothing and its message is not touched.
 */
/**
 * Deletes, from the logs of the messages `messageIds` selects, the attempts that one more attempt pushes out:
 * past the first `ATTEMPT_LOG_KEEP`, and not among the last `ATTEMPT_LOG_KEEP - 1` (the new one is the last).
 * Returns each deleted row's `message_id`, for the count on its message. Read through the (message, time, id)
 * index; a log within the bound loses nothing. A data-modifying CTE: it sees the log as it was before the
 * statement that also inserts the new attempt. `since` (the messages' earliest `event_at`) bounds what it reads:
 * no attempt is older than its message's event, so the attempts' older partitions are not read.
 */
export const pruneBeforeAttempt = (messageIds: SQL, since: SQL): SQL => sql`
  delete from ${webhookAttempts} d using (
    select message_id, attempted_at, id,
      row_number() over (partition by message_id order by attempted_at, id) as from_start,
      row_number() over (partition by message_id order by attempted_at desc, id desc) as from_end
    from ${webhookAttempts} where message_id in (${messageIds}) and attempted_at >= ${since}
  ) r
  where (d.message_id, d.attempted_at, d.id) = (r.message_id, r.attempted_at, r.id)
    and r.from_start > ${ATTEMPT_LOG_KEEP} and r.from_end >= ${ATTEMPT_LOG_KEEP}
  returning d.message_id`;

/**
 * Records an attempt and keeps its message's log bounded, in one statement: the rows between the first
 * `ATTEMPT_LOG_KEEP` and the last (this one among them) are deleted, and counted on the message
 * (`pruneBeforeAttempt`); a log within the bound loses nothing and its message is not touched.
 */
export async function insertAttempt(ctx: Ctx, attempt: AttemptInsert): Promise<void> {
  const a = attempt;
  await ctx.db.execute(sql`
    with pruned as (${pruneBeforeAttempt(sql`${a.messageId}`, sql`${eventAtKey(a.since)}::timestamptz`)}), counted as (
      update ${webhookMessages} set attempts_pruned = attempts_pruned + (select count(*) from pruned)
      where id = ${a.messageId} and exists (select 1 from pruned)
    )
    insert into ${webhookAttempts}
      (id, message_id, endpoint_id, attempted_at, status_code, latency_ms, response_excerpt, error_class,
       succeeded, throttled)
    values (${a.id}, ${a.messageId}, ${a.endpointId}, ${a.attemptedAt.toISOString()}::timestamptz,
      ${a.statusCode}, ${a.latencyMs}, ${a.responseExcerpt}, ${a.errorClass}, ${a.succeeded}, ${a.throttled})`);
}
