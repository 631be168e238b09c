import {
  events,
  pendingOrdered,
  undispatchedForSweep,
  WAITING_AT,
  webhookEndpoints,
  webhookMessages,
  webhookSequences,
} from '@stampcard/db';
import { and, asc, eq, inArray, lte, type SQL, sql } from 'drizzle-orm';
import type { Ctx } from '../../context';
import { ID_PREFIXES, TIME_WIDTH, TIMED_EVENT_LENGTH, TIMED_MESSAGE_LENGTH, timesOf } from '../../ids';
import type { Scheduled } from './messages';
import { notWaiting } from './ordering';

/** Largest number of events one fan-out takes. */
export const FAN_OUT_BATCH = 500;

/**
 * In the fan-out's SQL: the PENDING ordered messages of the pair (`endpoint_id`, `participant_id`) of `pair`, by
 * the index of those (`pendingOrdered`).
 */
const pendingOfPair = (pair: string) => sql`
  select 1 from ${webhookMessages} w
  where w.endpoint_id = ${sql.raw(pair)}.endpoint_id and w.participant_id = ${sql.raw(pair)}.participant_id
    and ${pendingOrdered(sql.raw('w.status'), sql.raw('w.ordered'))}`;

/**
 * Fans outbox events out to their campaigns' endpoints, in ONE statement: one message per (event, endpoint
 * that wants its type: one whose `eventTypes` lists it, or is empty), created idempotently (its id derives
 * from the event's and the endpoint's, so fanning out again finds the same row), and the events marked
 * dispatched. Events another dispatcher is fanning out right now are skipped (it holds their
 * rows). With `eventIds`, those events (a worker's committed batch); without, the oldest undispatched ones (the
 * sweep).
 *
 * The messages of a participant to an endpoint are numbered 1, 2, 3… (`sequence`) in the order their events
 * were recorded: the statement adds its count to the pair's row of `webhook_sequences`, which it holds until it
 * commits. So that no later event is numbered before an earlier one, an event waits while an earlier event of
 * its participant is still to fan out and not in this statement (another fan-out holds it, or it was not
 * asked for): it is answered in `deferred`, for the caller to try again shortly (the sweep takes what is left).
 *
 * For a PARTICIPANT-ordered endpoint, a message behind an earlier one of its participant still to send (made
 * before, or earlier in this statement) waits (`WAITING_AT`) and is not scheduled: the end of that one makes it
 * due (`releaseNextOrdered`). The statement holds such an earlier message (its row locked) until it commits, so
 * that its end sees the new one; it never waits for one that others hold (a claim, an end being written): an
 * event whose participant's every PENDING message is held elsewhere is answered in `deferred` instead.
 *
 * An endpoint that is disabled gets its messages all the same: they wait for it to be enabled again (a deleted
 * one, whose messages are being deleted in batches, gets none). The
 * answer lists the new messages of enabled endpoints, for the caller to put in the delivery queue.
 */
export async function fanOutEvents(
  ctx: Ctx,
  eventIds?: string[],
): Promise<{
  events: number;
  scheduled: (Scheduled & { eventId: string })[];
  /**
   * Events it held but left, waiting for an earlier event of their participant, or for an ordered endpoint's
   * PENDING message of their participant that others hold right now: to fan out again soon.
   */
  deferred: string[];
}> {
  const [row] = await ctx.db.execute<{
    events: number;
    created: (Scheduled & { eventId: string })[] | null;
    deferred: string[] | null;
  }>(fanOutStatement(ctx.clock.now(), eventIds));
  return { events: row?.events ?? 0, scheduled: row?.created ?? [], deferred: row?.deferred ?? [] };
}

/**
 * `fanOutEvents`'s one statement at `at`: of `eventIds`, or the sweep's (the oldest undispatched events) without.
 * Exported for the tests that read its plan.
 */
export function fanOutStatement(at: Date, eventIds?: string[]): SQL {
  const now = at.toISOString();
  // Ids that carry their time name the partitions to read. Only the sweep states `undispatchedForSweep`, the
  // condition of the index of the oldest undispatched events: events asked for by id are found by their id's
  // index.
  const times = eventIds ? timesOf(eventIds) : null;
  const which = eventIds
    ? sql`e.dispatched_at is null and e.id = any(${sql.param([...eventIds])}::text[]) ${
        times
          ? sql`and e.created_at = any(${sql.param(times.map((t) => t.toISOString()))}::text[]::timestamptz[])`
          : sql``
      }`
    : undispatchedForSweep(sql.raw('e.dispatched_at'), sql.raw('e.seq'));
  return sql`
    with locked as (
      select e.id, e.seq, e.campaign_id, e.type, e.created_at, e.data #>> '{participant,id}' as participant_id
      from ${events} e
      where ${which}
      order by e.seq
      limit ${FAN_OUT_BATCH}
      for update skip locked
    ), previous as (
      -- Each held event's previous undispatched event of its participant: one backward step of the index of
      -- undispatched events, however many its participant has.
      select l.participant_id, l.seq, (
        select u.seq from ${events} u
        where (u.data #>> '{participant,id}') = l.participant_id and u.dispatched_at is null and u.seq < l.seq
        order by u.seq desc limit 1) as previous_seq
      from locked l where l.participant_id is not null
    ), blocked as (
      -- Per participant, its first held event whose previous one is not held here: it and those after it wait.
      select participant_id, min(seq) as from_seq from previous
      where previous_seq is not null and previous_seq not in (select seq from locked)
      group by participant_id
    ), ready as (
      select l.* from locked l left join blocked b on b.participant_id = l.participant_id
      where b.from_seq is null or l.seq < b.from_seq
    ), reach as (
      -- Each ready event with each endpoint that takes it: one whose event_types lists its type, or is empty.
      select r.id as event_id, r.seq, r.campaign_id, r.type, r.created_at, r.participant_id, ep.id as endpoint_id,
        ep.enabled, (ep.ordering = 'PARTICIPANT' and r.participant_id is not null) as ordered
      from ready r join ${webhookEndpoints} ep on ep.campaign_id = r.campaign_id and ep.deleted_at is null
      where cardinality(ep.event_types) = 0 or r.type = any(ep.event_types)
    ), pending as materialized (
      -- Each ordered pair with a message still PENDING as this statement began, and whether this statement now
      -- holds one that is still PENDING (locked, so that its end waits for this commit and sees the messages made
      -- here). One that others hold (a claim, an ending being written) is skipped, not waited for: a statement
      -- that waits for a row while holding others can deadlock with the dispatcher's claims and successes, which
      -- lock theirs in another order. A pair whose every PENDING message is held elsewhere is not known to wait:
      -- its participant's events are deferred and tried again shortly.
      select o.endpoint_id, o.participant_id, exists (${pendingOfPair('o')} for update skip locked) as held
      from (select distinct endpoint_id, participant_id from reach where ordered) o
      where exists (${pendingOfPair('o')})
    ), picked as (
      select r.* from ready r
      where r.participant_id is null
        or r.participant_id not in (select participant_id from pending where not held)
    ), targets as (
      select t.* from reach t join picked p on p.id = t.event_id
    ), counted as (
      insert into ${webhookSequences} (endpoint_id, participant_id, last)
      select endpoint_id, participant_id, count(*) from targets where participant_id is not null
      group by endpoint_id, participant_id
      order by endpoint_id, participant_id
      on conflict (endpoint_id, participant_id) do update set last = ${webhookSequences}.last + excluded.last
      returning endpoint_id, participant_id, last
    ), numbered as (
      select t.*, c.last - count(*) over pair + row_number() over (pair order by t.seq) as sequence,
        -- An ordered message waits behind an earlier one of its pair: of this statement, or still to send (one
        -- this statement holds, above).
        t.ordered and (row_number() over (pair order by t.seq) > 1 or exists (
          select 1 from pending pe
          where pe.endpoint_id = t.endpoint_id and pe.participant_id = t.participant_id and pe.held)) as waits
      from targets t
      left join counted c on c.endpoint_id = t.endpoint_id and c.participant_id = t.participant_id
      window pair as (partition by t.endpoint_id, t.participant_id)
    ), created as (
      insert into ${webhookMessages}
        (id, endpoint_id, campaign_id, event_id, participant_id, sequence, ordered, event_type, status,
         next_attempt_at, created_at, updated_at, event_at)
      select ${ID_PREFIXES.webhookMessage} || case
          -- An event id that carries its time gives it to the message's (see \`idTime\`): the partition of both.
          when length(t.event_id) = ${ID_PREFIXES.event.length + TIMED_EVENT_LENGTH}
            then substr(t.event_id, ${ID_PREFIXES.event.length + 1}, ${TIME_WIDTH})
              || substr(t.hash, 1, ${TIMED_MESSAGE_LENGTH - TIME_WIDTH})
          else substr(t.hash, 1, 24) end,
        t.endpoint_id, t.campaign_id, t.event_id, t.participant_id, t.sequence, t.ordered, t.type, 'PENDING',
        case when t.waits then ${WAITING_AT.toISOString()}::timestamptz else ${now}::timestamptz end,
        ${now}::timestamptz, ${now}::timestamptz, t.created_at
      from (select *, encode(sha256(convert_to(event_id || E'\n' || endpoint_id, 'UTF8')), 'hex') as hash
        from numbered) t
      on conflict do nothing
      returning id, endpoint_id, event_id, generation
    ), marked as (
      update ${events} set dispatched_at = ${now}::timestamptz
      where (id, created_at) in (select id, created_at from picked) returning 1
    )
    select (select count(*) from marked)::int as events,
      (select array_agg(id) from locked where id not in (select id from picked)) as deferred,
      (select json_agg(json_build_object('messageId', c.id, 'generation', c.generation, 'endpointId', c.endpoint_id,
          'eventId', c.event_id)
         order by t.seq, c.endpoint_id)
       from created c join numbered t on t.event_id = c.event_id and t.endpoint_id = c.endpoint_id
       where t.enabled and not t.waits) as created`;
}

/** PENDING messages of enabled endpoints that also meet `where`, as jobs to schedule (the sweep's and a re-run's). */
function pendingOfEnabledEndpoints(ctx: Ctx, where: SQL | undefined) {
  return ctx.db
    .select({ messageId: webhookMessages.id, generation: webhookMessages.generation })
    .from(webhookMessages)
    .innerJoin(webhookEndpoints, eq(webhookEndpoints.id, webhookMessages.endpointId))
    .where(
      and(
        eq(webhookMessages.status, 'PENDING'),
        // Not one waiting for an earlier message of its participant: that one's end makes it due.
        notWaiting,
        eq(webhookEndpoints.enabled, true),
        where,
      ),
    )
    .$dynamic();
}

/**
 * The messages of `eventIds` never attempted yet (PENDING, no attempt) of enabled endpoints. A fan-out run
 * again after its process died asks for them: the first run may have committed them and died before it queued
 * their deliveries, and the events, now dispatched, are not fanned out again. Each goes on as its own job,
 * whose id is the message's, so one already queued is not queued twice.
 */
export async function unsentMessagesOf(ctx: Ctx, eventIds: string[]): Promise<Scheduled[]> {
  if (eventIds.length === 0) return [];
  return pendingOfEnabledEndpoints(
    ctx,
    and(inArray(webhookMessages.eventId, eventIds), eq(webhookMessages.attempts, 0)),
  );
}

/**
 * PENDING messages of enabled endpoints whose attempt is overdue by `graceMs`: a healthy dispatcher takes a
 * message within moments of its due time, so these may have lost their job (Redis lost data, a dispatcher
 * died between commit and enqueue). The sweep makes sure each has one.
 */
export async function findOverdueMessages(ctx: Ctx, graceMs: number, limit = 500): Promise<Scheduled[]> {
  const cutoff = new Date(ctx.clock.now().getTime() - graceMs);
  return pendingOfEnabledEndpoints(ctx, lte(webhookMessages.nextAttemptAt, cutoff))
    .orderBy(asc(webhookMessages.nextAttemptAt))
    .limit(limit);
}
