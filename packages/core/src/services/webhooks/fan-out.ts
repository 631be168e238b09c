import { events, webhookEndpoints, webhookMessages } from '@stampcard/db';
import { and, asc, eq, inArray, lte, type SQL, sql } from 'drizzle-orm';
import type { Ctx } from '../../context';
import { ID_PREFIXES } from '../../ids';
import type { Scheduled } from './messages';

/** Largest number of events one fan-out takes. */
export const FAN_OUT_BATCH = 500;

/**
 * Fans outbox events out to their campaigns' endpoints, in ONE statement: one message per (event, endpoint
 * that wants its type: one whose `eventTypes` lists it, or is empty), created idempotently (its id derives
 * from the event's and the endpoint's, so fanning out again finds the same row), and the events marked
 * dispatched. Events another dispatcher is fanning out right now are skipped (it holds their
 * rows). With `eventIds`, those events (a worker's committed batch); without, the oldest undispatched ones (the
 * sweep).
 *
 * An endpoint that is disabled gets its messages all the same: they wait for it to be enabled again (a deleted
 * one, whose messages are being deleted in batches, gets none). The
 * answer lists the new messages of enabled endpoints, for the caller to put in the delivery queue.
 */
export async function fanOutEvents(
  ctx: Ctx,
  eventIds?: string[],
): Promise<{ events: number; scheduled: Scheduled[] }> {
  const now = ctx.clock.now().toISOString();
  const which = eventIds ? sql`and e.id = any(${sql.param([...eventIds])}::text[])` : sql``;
  const [row] = await ctx.db.execute<{ events: number; created: Scheduled[] | null }>(sql`
    with picked as (
      select e.id, e.seq, e.campaign_id, e.type from ${events} e
      where e.dispatched_at is null ${which}
      order by e.seq
      limit ${FAN_OUT_BATCH}
      for update skip locked
    ), targets as (
      select p.id as event_id, p.seq, p.campaign_id, p.type, ep.id as endpoint_id, ep.enabled
      from picked p join ${webhookEndpoints} ep on ep.campaign_id = p.campaign_id and ep.deleted_at is null
      where cardinality(ep.event_types) = 0 or p.type = any(ep.event_types)
    ), created as (
      insert into ${webhookMessages}
        (id, endpoint_id, campaign_id, event_id, event_type, status, next_attempt_at, created_at, updated_at)
      select ${ID_PREFIXES.webhookMessage} || substr(encode(sha256(convert_to(t.event_id || E'\n' || t.endpoint_id,
          'UTF8')), 'hex'), 1, 24),
        t.endpoint_id, t.campaign_id, t.event_id, t.type, 'PENDING', ${now}::timestamptz, ${now}::timestamptz,
        ${now}::timestamptz
      from targets t
      on conflict do nothing
      returning id, endpoint_id, event_id, generation
    ), marked as (
      update ${events} set dispatched_at = ${now}::timestamptz where id in (select id from picked) returning 1
    )
    select (select count(*) from marked)::int as events,
      (select json_agg(json_build_object('messageId', c.id, 'generation', c.generation, 'endpointId', c.endpoint_id)
         order by t.seq, c.endpoint_id)
       from created c join targets t on t.event_id = c.event_id and t.endpoint_id = c.endpoint_id
       where t.enabled) as created`);
  return { events: row?.events ?? 0, scheduled: row?.created ?? [] };
}

/** PENDING messages of enabled endpoints that also meet `where`, as jobs to schedule (the sweep's and a re-run's). */
function pendingOfEnabledEndpoints(ctx: Ctx, where: SQL | undefined) {
  return ctx.db
    .select({ messageId: webhookMessages.id, generation: webhookMessages.generation })
    .from(webhookMessages)
    .innerJoin(webhookEndpoints, eq(webhookEndpoints.id, webhookMessages.endpointId))
    .where(and(eq(webhookMessages.status, 'PENDING'), eq(webhookEndpoints.enabled, true), where))
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
