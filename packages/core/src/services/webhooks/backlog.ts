import {
  type BacklogKind,
  statusByKey,
  type Tx,
  webhookAttempts,
  webhookEndpoints,
  webhookMessages,
  webhookSequences,
} from '@stampcard/db';
import { and, count, eq, lte, sql } from 'drizzle-orm';
import type { Ctx } from '../../context';
import { DomainError } from '../../errors';
import { pgError } from '../../pg-error';
import { pickedMessages, replayed, type Scheduled } from './messages';
import { notWaiting, orderedKeys, releaseNextOrdered } from './ordering';
import { type EndpointRow, serializeBacklog } from './views';

/**
 * Operations on all of an endpoint's messages (release them when it is enabled, discard its pending ones,
 * delete them with it) run in bounded batches: the request runs the first batch itself, in its own transaction,
 * and answers; a `webhook-backlog.run` job runs each next batch. An endpoint holding a million messages is
 * therefore changed by statements of at most `limit` messages each, never one over everything (which the
 * statement timeout ends, leaving an endpoint that can be neither enabled nor removed). The operation's state
 * (kind, cursor, counts) is in the endpoint row, so a crash loses at most a batch's job, which the sweep finds.
 */

/** The most messages one batch handles (`WEBHOOK_BACKLOG_BATCH`). */
export const DEFAULT_BACKLOG_BATCH = 1000;

/** The smallest batch a batch that keeps running into the statement timeout falls back to. */
export const MIN_BACKLOG_BATCH = 10;

/** One batch of a backlog operation: its job's payload (and id, see `backlogJobId`). */
export type BacklogStep = { endpointId: string; operation: number; batch: number };

export type BacklogBatch = {
  /** False: the step was not the operation's next one (run already, or superseded): nothing was done. */
  ran: boolean;
  /** Messages the batch handled. */
  handled: number;
  /**
   * Messages the batch made due, for the caller to put in the delivery queue: a RELEASE's, or the ordered
   * messages a DISCARD's discarded ones held back.
   */
  scheduled: Scheduled[];
  /** The next batch, while the operation runs. */
  next: BacklogStep | null;
  /** The batch size it ran at: less than asked when the statement timeout made it halve. */
  size: number;
};

const STALE: BacklogBatch = { ran: false, handled: 0, scheduled: [], next: null, size: 0 };

/** Whether PostgreSQL cancelled the statement at `statement_timeout` (SQLSTATE 57014). */
const statementTimedOut = (err: unknown) => pgError(err)?.code === '57014';

/** The endpoint row's operation columns, reset for a new operation of `kind` starting `now`. */
export function startBacklog(current: EndpointRow, kind: BacklogKind, total: number | null, now: Date) {
  return {
    backlogKind: kind,
    backlogState: 'RUNNING' as const,
    backlogOperation: current.backlogOperation + 1,
    backlogTotal: total,
    backlogDone: 0,
    backlogBatches: 0,
    backlogStartedAt: now,
    backlogFinishedAt: null,
    backlogTouchedAt: now,
    backlogCursorAt: null,
    backlogCursorId: null,
  };
}

/** 409 OPERATION_IN_PROGRESS: one backlog operation at a time (deleting the endpoint excepted). */
export function operationInProgress(row: EndpointRow): DomainError {
  return new DomainError(
    'OPERATION_IN_PROGRESS',
    `Webhook endpoint ${row.id} is still running a ${row.backlogKind} of its messages: wait until its backlog is DONE`,
    { operation: serializeBacklog(row) },
  );
}

export const runningBacklog = (row: EndpointRow) => row.backlogState === 'RUNNING';

/** The pending messages an operation starting now would handle: one range of the pending-messages index. */
export async function countPending(ctx: Ctx, endpointId: string, until: Date): Promise<number> {
  const [row] = await ctx.db
    .select({ n: count() })
    .from(webhookMessages)
    .where(
      and(
        eq(webhookMessages.endpointId, endpointId),
        eq(webhookMessages.status, 'PENDING'),
        lte(webhookMessages.createdAt, until),
      ),
    );
  return row?.n ?? 0;
}

/**
 * The next batch of the endpoint's running operation, in the caller's transaction, which holds the endpoint
 * row locked (`for update`): one statement over at most `limit` messages, then the progress in the row. A
 * batch that runs into the statement timeout (a slow database, messages with long attempt logs) is rolled back
 * to its savepoint and run again at half the size, down to `MIN_BACKLOG_BATCH`, so an operation always moves.
 */
export async function backlogBatch(tx: Ctx, ep: EndpointRow, limit: number): Promise<BacklogBatch> {
  for (let size = limit; ; size = Math.max(MIN_BACKLOG_BATCH, Math.floor(size / 2))) {
    try {
      return await tx.db.transaction((db) => oneBatch({ ...tx, db }, ep, size));
    } catch (err) {
      if (!statementTimedOut(err) || size <= MIN_BACKLOG_BATCH) throw err;
    }
  }
}

async function oneBatch(tx: Ctx, ep: EndpointRow, limit: number): Promise<BacklogBatch> {
  const now = tx.clock.now();
  const step = { endpointId: ep.id, operation: ep.backlogOperation, batch: ep.backlogBatches };
  if (ep.backlogKind === 'DELETE') {
    // In no order: every message goes, and its attempts with it (in the same statement: no foreign key ties
    // them, as they are partitioned apart).
    const gone = await tx.db.execute<{ id: string }>(sql`
      with gone as (
        delete from ${webhookMessages} where (id, event_at) in (
          select id, event_at from ${webhookMessages} where endpoint_id = ${ep.id}
          limit ${limit} for update skip locked)
        returning id
      ), attempts as (
        delete from ${webhookAttempts} where message_id in (select id from gone)
      )
      select id from gone`);
    // Its sequence counters too, as many a batch (one per participant it ever had a message of).
    const counters = await tx.db.execute(sql`
      delete from ${webhookSequences} where endpoint_id = ${ep.id} and participant_id in (
        select participant_id from ${webhookSequences} where endpoint_id = ${ep.id} limit ${limit})
      returning 1`);
    if (gone.length < limit && counters.length < limit) {
      // Its last messages are gone (none can be added: fan-out and the API skip a deleted endpoint).
      await tx.db.delete(webhookEndpoints).where(eq(webhookEndpoints.id, ep.id));
      return { ran: true, handled: gone.length, scheduled: [], next: null, size: limit };
    }
    await progress(tx, ep, gone.length, [], false, now);
    return {
      ran: true,
      handled: gone.length,
      scheduled: [],
      next: { ...step, batch: step.batch + 1 },
      size: limit,
    };
  }
  if (ep.backlogKind === 'RELEASE' && !ep.enabled) {
    // Disabled again (by a 410, say) while releasing: what is left stays held, as for any disabled endpoint.
    await tx.db
      .update(webhookEndpoints)
      .set({ backlogState: 'CANCELLED', backlogFinishedAt: now, backlogTouchedAt: now })
      .where(eq(webhookEndpoints.id, ep.id));
    return { ran: true, handled: 0, scheduled: [], next: null, size: limit };
  }
  // The operation's messages: pending, made before it started, after the last one it handled.
  const matching = and(
    eq(webhookMessages.endpointId, ep.id),
    eq(webhookMessages.status, 'PENDING'),
    // A release leaves an ordered message waiting for an earlier one of its participant as it is: that one's
    // end makes it due. A discard takes it too.
    ep.backlogKind === 'RELEASE' ? notWaiting : undefined,
    lte(webhookMessages.createdAt, ep.backlogStartedAt!),
    sql`(${webhookMessages.createdAt}, ${webhookMessages.id}) > (select coalesce(e.backlog_cursor_at, '-infinity'::timestamptz), coalesce(e.backlog_cursor_id, '') from ${webhookEndpoints} e where e.id = ${ep.id})`,
  );
  const rows = await tx.db
    .update(webhookMessages)
    .set(ep.backlogKind === 'RELEASE' ? replayed(now) : { status: 'DISCARDED', updatedAt: now })
    .where(pickedMessages(tx, matching, limit))
    .returning({
      messageId: webhookMessages.id,
      generation: webhookMessages.generation,
      endpointId: webhookMessages.endpointId,
      participantId: webhookMessages.participantId,
      ordered: webhookMessages.ordered,
    });
  const finished = rows.length < limit;
  // Discarded ordered messages: a message made since the discard started, waiting behind one of them, goes on.
  const released =
    ep.backlogKind === 'DISCARD' ? await releaseNextOrdered(tx, orderedKeys(rows), null, now) : [];
  await progress(
    tx,
    ep,
    rows.length,
    rows.map((r) => r.messageId),
    finished,
    now,
  );
  return {
    ran: true,
    handled: rows.length,
    scheduled:
      ep.backlogKind === 'RELEASE'
        ? rows.map((r) => ({ messageId: r.messageId, generation: r.generation, endpointId: ep.id }))
        : released,
    next: finished ? null : { ...step, batch: step.batch + 1 },
    size: limit,
  };
}

/** A batch's progress in the endpoint row: counts, the cursor (the last message it handled), the end. */
async function progress(
  tx: Ctx,
  ep: EndpointRow,
  handled: number,
  ids: string[],
  finished: boolean,
  now: Date,
) {
  // The cursor is read back in SQL, to the microsecond (a Date in JavaScript keeps milliseconds).
  const last = (column: 'created_at' | 'id') =>
    sql`(select m.${sql.raw(column)} from ${webhookMessages} m where m.id = any(${sql.param(ids)}::text[])
      order by m.created_at desc, m.id desc limit 1)`;
  await tx.db
    .update(webhookEndpoints)
    .set({
      backlogDone: sql`${webhookEndpoints.backlogDone} + ${handled}`,
      backlogBatches: sql`${webhookEndpoints.backlogBatches} + 1`,
      backlogTouchedAt: now,
      ...(ids.length > 0 ? { backlogCursorAt: last('created_at'), backlogCursorId: last('id') } : {}),
      ...(finished
        ? {
            backlogState: 'DONE' as const,
            backlogFinishedAt: now,
            // Messages committed late, though made before it started, were handled too.
            backlogTotal: sql`greatest(coalesce(${webhookEndpoints.backlogTotal}, 0), ${webhookEndpoints.backlogDone} + ${handled})`,
          }
        : {}),
    })
    .where(eq(webhookEndpoints.id, ep.id));
}

/**
 * The endpoint a step is the next batch of, locked: read by its key (`statusByKey`), not through the index of
 * every RUNNING backlog operation, which the planner may take with the plain `backlog_state = 'RUNNING'` and
 * then read them all for each step (running-plan test, which reads this statement's plan).
 */
export const backlogOfStep = (db: Tx, step: BacklogStep) =>
  db
    .select()
    .from(webhookEndpoints)
    .where(
      and(
        eq(webhookEndpoints.id, step.endpointId),
        eq(webhookEndpoints.backlogOperation, step.operation),
        eq(webhookEndpoints.backlogBatches, step.batch),
        statusByKey(webhookEndpoints.backlogState, 'RUNNING'),
      ),
    )
    .for('update');

/**
 * Runs one batch of a backlog operation (a `webhook-backlog.run` job), in its own transaction. A step that is
 * not the operation's next one (its job ran twice, or the operation was superseded or ended) does nothing.
 */
export async function runBacklogStep(ctx: Ctx, step: BacklogStep, limit: number): Promise<BacklogBatch> {
  return ctx.db.transaction(async (db) => {
    const tx = { ...ctx, db };
    const [ep] = await backlogOfStep(tx.db, step);
    return ep ? backlogBatch(tx, ep, limit) : STALE;
  });
}

/**
 * RUNNING operations whose last batch is older than `graceMs`: their next job may be lost (Redis lost it, a
 * process died between a batch's commit and its next job). The sweep makes sure each has its job.
 */
export async function findStalledBacklogs(ctx: Ctx, graceMs: number, limit = 100): Promise<BacklogStep[]> {
  const cutoff = new Date(ctx.clock.now().getTime() - graceMs);
  const rows = await ctx.db
    .select({
      endpointId: webhookEndpoints.id,
      operation: webhookEndpoints.backlogOperation,
      batch: webhookEndpoints.backlogBatches,
    })
    .from(webhookEndpoints)
    .where(and(eq(webhookEndpoints.backlogState, 'RUNNING'), lte(webhookEndpoints.backlogTouchedAt, cutoff)))
    .orderBy(webhookEndpoints.backlogTouchedAt)
    .limit(limit);
  return rows;
}
