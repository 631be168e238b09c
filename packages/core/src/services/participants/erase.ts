import {
  auditLog,
  type ErasurePhase,
  erasures,
  events,
  scrubIdempotentAnswers,
  statusByKey,
  type Tx,
  webhookAttempts,
  webhookMessages,
} from '@stampcard/db';
import { and, eq, lte, type SQLWrapper, sql } from 'drizzle-orm';
import { type Ctx, type ErasureStep, handOff, unitOfWork } from '../../context';
import { notFound } from '../../errors';
import {
  ERASED_PARTICIPANT,
  ERASED_PARTICIPANT_COLUMNS,
  ERASED_SUBMISSION,
  eraseParticipant,
} from '../../rules/erasure';

/**
 * Events scrubbed per batch (one statement). Measured on a busy 2-core machine: 5,000 took 0.65 to 0.9 s
 * (every index of `events` gets the new row version), so 2,000 stays far inside the 3 s statement timeout.
 */
export const ERASE_BATCH = 2000;
/** Stored `Idempotency-Key` answers scrubbed per batch (each is parsed and rewritten in JavaScript). */
export const ERASE_ANSWER_BATCH = 500;

/**
 * Right to erasure: a deleted participant's personal data leaves what Stampcard keeps after it, in bounded
 * batches, never in one transaction over its whole history (one event per action: unbounded):
 *
 * - its stored events (`events.data`, found through `events_participant_idx`, newest first, so the events
 *   whose messages may still be pending go in the first batch): an event shows a person under `participant`
 *   (merged with `ERASED_PARTICIPANT`) and, for the form events, `formSubmission` (merged with
 *   `ERASED_SUBMISSION`): the rule of `eraseParticipant`, on the shapes events have. A batch is one statement
 *   that never carries the data out of PostgreSQL. Webhook messages are built from their event when they are
 *   sent, so a message sent after its event's batch carries the erased copy;
 * - what receivers answered to those events' messages (`webhook_attempts.response_excerpt`: a receiver may echo
 *   the body), set to null, in the same statement;
 * - then the stored `Idempotency-Key` answers that show it (tagged with its id when recorded), by
 *   `eraseParticipant`. Their request paths hold no email: a key row stores the path as logged.
 *
 * The deletion's transaction writes the `erasures` row and runs the first batch (`startErasure`); each next
 * batch is a `participant-erasure.run` job, one short transaction (`runErasureStep`). A batch that leaves work
 * registers the next step (`handOff`), so its job is queued once the batch has committed (`ctx.afterCommit`);
 * one lost on the way is resumed by the worker's relay (`findStalledErasures`). Its form submissions and
 * participant rewards went with its row (the foreign keys cascade). Ids, counts, statuses and times stay, so
 * the ledger still adds up.
 */

/**
 * The join from `events` to the running erasure of the participant an event shows (by primary key: one look-up
 * a row). The event feed and webhook delivery select `erasures.participantId` through it and show the data by
 * `shownData`: an event the background has not reached yet is shown and sent erased all the same.
 */
export const runningErasureOfEvent = runningErasureOf(events.data);

/** `runningErasureOfEvent` for an event's `data` read under another name (a subquery's). */
export function runningErasureOf(data: SQLWrapper) {
  return and(
    eq(erasures.participantId, sql`(${data} #>> '{participant,id}')`),
    statusByKey(erasures.state, 'RUNNING'),
  );
}

export type ErasureBatch = {
  /** False: the step was not the erasure's next one (its job ran twice, or the erasure is done): nothing done. */
  ran: boolean;
  /** Events and answers this batch scrubbed. */
  events: number;
  answers: number;
  /** The next batch, while the erasure runs; null once it is DONE. */
  next: ErasureStep | null;
};

type ErasureRow = typeof erasures.$inferSelect;

/**
 * Starts the erasure of participant `participantId`, just deleted, in the deletion's transaction (a unit of
 * work): its `erasures` row, then its first batch. A short history is erased entirely here (`next` null: DONE).
 */
export async function startErasure(
  tx: Ctx,
  campaign: { id: string; accountId: string },
  participantId: string,
  limit = ERASE_BATCH,
): Promise<ErasureBatch> {
  const now = tx.clock.now();
  const [row] = await tx.db
    .insert(erasures)
    .values({
      participantId,
      accountId: campaign.accountId,
      campaignId: campaign.id,
      state: 'RUNNING',
      phase: 'EVENTS',
      createdAt: now,
      touchedAt: now,
    })
    .returning();
  return erasureBatch(tx, row!, limit);
}

/**
 * The erasure a step is the next batch of, locked: read by its participant's key (`statusByKey`), not through
 * the index of every RUNNING erasure, which the planner takes with the plain `state = 'RUNNING'` when its
 * statistics were taken while none ran, and then reads them all for each step of a mass deletion
 * (running-plan test, which reads this statement's plan).
 */
export const erasureOfStep = (db: Tx, step: ErasureStep) =>
  db
    .select()
    .from(erasures)
    .where(
      and(
        eq(erasures.participantId, step.participantId),
        eq(erasures.batches, step.batch),
        statusByKey(erasures.state, 'RUNNING'),
      ),
    )
    .for('update');

/**
 * Runs one batch of an erasure (a `participant-erasure.run` job), in its own short unit of work, which holds
 * the `erasures` row locked. A step that is not the erasure's next one does nothing.
 */
export async function runErasureStep(
  ctx: Ctx,
  step: ErasureStep,
  limit = ERASE_BATCH,
): Promise<ErasureBatch> {
  return unitOfWork(ctx, async (tx) => {
    const [row] = await erasureOfStep(tx.db, step);
    return row ? erasureBatch(tx, row, limit) : { ran: false, events: 0, answers: 0, next: null };
  });
}

/**
 * RUNNING erasures whose last batch is older than `graceMs`: their next job may be lost (Redis lost it, a
 * process died between a batch's commit and the next job's enqueue). The relay's sweep makes sure each has it.
 */
export async function findStalledErasures(ctx: Ctx, graceMs: number, limit = 100): Promise<ErasureStep[]> {
  const cutoff = new Date(ctx.clock.now().getTime() - graceMs);
  return ctx.db
    .select({ participantId: erasures.participantId, batch: erasures.batches })
    .from(erasures)
    .where(and(eq(erasures.state, 'RUNNING'), lte(erasures.touchedAt, cutoff)))
    .orderBy(erasures.touchedAt)
    .limit(limit);
}

/** What `GET …/participant/{participantId}/erasure` shows: ids, counts and times (integer UTC ms). */
export type ErasureView = {
  participantId: string;
  status: 'PENDING' | 'DONE';
  erasedEventCount: number;
  erasedAnswerCount: number;
  batches: number;
  startedAt: number;
  updatedAt: number;
  finishedAt: number | null;
};

/** The erasure of deleted participant `participantId` of campaign `campaignId`; 404 when it has none. */
export async function showErasure(ctx: Ctx, campaignId: string, participantId: string): Promise<ErasureView> {
  const [row] = await ctx.db
    .select()
    .from(erasures)
    .where(and(eq(erasures.participantId, participantId), eq(erasures.campaignId, campaignId)));
  if (!row) throw notFound(`Erasure of participant ${participantId} in campaign ${campaignId}`);
  return {
    participantId: row.participantId,
    status: row.state === 'DONE' ? 'DONE' : 'PENDING',
    erasedEventCount: row.erasedEvents,
    erasedAnswerCount: row.erasedAnswers,
    batches: row.batches,
    startedAt: row.createdAt.getTime(),
    updatedAt: row.touchedAt.getTime(),
    finishedAt: row.finishedAt?.getTime() ?? null,
  };
}

/**
 * One batch: up to `limit` events (newest first, below the cursor); once none is left, up to
 * `ERASE_ANSWER_BATCH` stored answers in the same transaction; then the progress in the row, and the next
 * step registered for the after-commit hand-off while the erasure runs.
 */
async function erasureBatch(tx: Ctx, row: ErasureRow, limit: number): Promise<ErasureBatch> {
  let phase: ErasurePhase = row.phase;
  let cursor = row.cursorSeq;
  let erasedEvents = 0;
  let erasedAnswers = 0;
  let done = false;
  if (phase === 'EVENTS') {
    const batch = await eraseEvents(tx, row.campaignId, row.participantId, cursor, limit);
    erasedEvents = batch.n;
    if (batch.first !== null) cursor = BigInt(batch.first);
    if (batch.n < limit) phase = 'ANSWERS';
  }
  if (phase === 'ANSWERS') {
    erasedAnswers = await scrubIdempotentAnswers(
      tx.db,
      row.participantId,
      (body) => eraseJson(body, row.participantId),
      ERASE_ANSWER_BATCH,
      1,
    );
    if (erasedAnswers < ERASE_ANSWER_BATCH) {
      phase = 'AUDIT';
      cursor = null;
    }
  }
  if (phase === 'AUDIT') {
    const batch = await eraseAuditEntries(tx, row.participantId, cursor, limit);
    if (batch.last !== null) cursor = BigInt(batch.last);
    done = batch.n < limit;
  }
  const now = tx.clock.now();
  await tx.db
    .update(erasures)
    .set({
      phase,
      cursorSeq: cursor,
      batches: row.batches + 1,
      erasedEvents: row.erasedEvents + erasedEvents,
      erasedAnswers: row.erasedAnswers + erasedAnswers,
      touchedAt: now,
      ...(done ? { state: 'DONE' as const, finishedAt: now } : {}),
    })
    .where(eq(erasures.participantId, row.participantId));
  const next = done ? null : { participantId: row.participantId, batch: row.batches + 1 };
  if (next) await handOff(tx, { erasureSteps: [next] });
  return { ran: true, events: erasedEvents, answers: erasedAnswers, next };
}

/** Up to `limit` of the participant's events below `before` (null: any), newest first, in one statement. */
async function eraseEvents(
  tx: Ctx,
  campaignId: string,
  participantId: string,
  before: bigint | null,
  limit: number,
): Promise<{ n: number; first: string | null }> {
  const erasedParticipant = JSON.stringify(ERASED_PARTICIPANT);
  const erasedSubmission = JSON.stringify(ERASED_SUBMISSION);
  const below = before === null ? sql`` : sql`and e.seq < ${before.toString()}::bigint`;
  const [done] = await tx.db.execute<{ n: number; first: string | null }>(sql`
    with batch as (
      select e.seq, e.id, e.created_at from ${events} e
      where (e.data #>> '{participant,id}') = ${participantId} and e.campaign_id = ${campaignId} ${below}
      order by (e.data #>> '{participant,id}') desc, e.seq desc
      limit ${limit}
    ), scrubbed as (
      update ${events} e
      set data = e.data
        || jsonb_build_object('participant', (e.data -> 'participant') || ${erasedParticipant}::jsonb)
        || case when (e.data #>> '{formSubmission,participantId}') = ${participantId}
             then jsonb_build_object('formSubmission', (e.data -> 'formSubmission') || ${erasedSubmission}::jsonb)
             else '{}'::jsonb end
      -- By id and time: each row is found in its own partition through the id index.
      from batch b where e.id = b.id and e.created_at = b.created_at
      returning 1
    ), answered as (
      update ${webhookAttempts} a set response_excerpt = null
      from ${webhookMessages} m, batch b
      where m.event_id = b.id and a.message_id = m.id and a.response_excerpt is not null
      returning 1
    )
    select (select count(*) from scrubbed)::int as n, (select min(seq) from batch)::text as first`);
  return { n: done?.n ?? 0, first: done?.first ?? null };
}

/**
 * Up to `limit` of the participant's entries in the audit log after id `after` (null: from the first), oldest
 * first, in one statement: each personal column `before` and `after` hold set as erasure leaves it
 * (`ERASED_PARTICIPANT_COLUMNS`). Its ids, times, actors and other columns stay.
 */
async function eraseAuditEntries(
  tx: Ctx,
  participantId: string,
  after: bigint | null,
  limit: number,
): Promise<{ n: number; last: string | null }> {
  const erased = JSON.stringify(ERASED_PARTICIPANT_COLUMNS);
  const from = after === null ? sql`` : sql`and a.id > ${after.toString()}::bigint`;
  const scrub = (column: 'before' | 'after') => {
    const c = sql.raw(`a.${column}`);
    return sql`case when ${c} is null then null else ${c} || coalesce((
      select jsonb_object_agg(e.key, e.value) from jsonb_each(${erased}::jsonb) e where ${c} ? e.key
    ), '{}'::jsonb) end`;
  };
  const [done] = await tx.db.execute<{ n: number; last: string | null }>(sql`
    with batch as (
      select a.id from ${auditLog} a
      where a.entity = 'participant' and a.entity_id = ${participantId} ${from}
      order by a.id limit ${limit}
    ), scrubbed as (
      update ${auditLog} a set before = ${scrub('before')}, after = ${scrub('after')}
      from batch b where a.id = b.id
      returning a.id
    )
    select (select count(*) from scrubbed)::int as n, (select max(id) from batch)::text as last`);
  return { n: done?.n ?? 0, last: done?.last ?? null };
}

/** A stored JSON answer without the participant; only JSON answers are tagged, anything else keeps nothing. */
function eraseJson(body: string, participantId: string): string {
  try {
    return JSON.stringify(eraseParticipant(JSON.parse(body), participantId).value);
  } catch {
    return '';
  }
}
