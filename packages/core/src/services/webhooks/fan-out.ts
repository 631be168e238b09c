import { createHash } from 'node:crypto';
import { anyOf, events, webhookEndpoints, webhookMessages } from '@stampcard/db';
import { and, asc, eq, isNull, lte } from 'drizzle-orm';
import type { Ctx } from '../../context';
import { ID_PREFIXES } from '../../ids';
import { wantsEvent } from '../../rules/delivery';
import type { Scheduled } from './messages';

/** The id of an event's message to an endpoint: derived from both, so fanning out again finds the same row. */
export function messageIdFor(eventId: string, endpointId: string): string {
  return (
    ID_PREFIXES.webhookMessage +
    createHash('sha256').update(`${eventId}\n${endpointId}`).digest('hex').slice(0, 24)
  );
}

/** Largest number of events one fan-out takes. */
export const FAN_OUT_BATCH = 500;

/**
 * Fans outbox events out to their campaigns' endpoints, in one transaction: one message per (event, endpoint
 * that wants its type), created idempotently, then the events are marked dispatched. Events another
 * dispatcher is fanning out right now are skipped (it holds their rows). With `eventIds`, those events (a
 * worker's committed batch); without, the oldest undispatched ones (the sweep).
 *
 * An endpoint that is disabled gets its messages all the same: they wait for it to be enabled again. The
 * answer lists the new messages of enabled endpoints, for the caller to put in the delivery queue.
 */
export async function fanOutEvents(
  ctx: Ctx,
  eventIds?: string[],
): Promise<{ events: number; scheduled: Scheduled[] }> {
  return ctx.db.transaction(async (db) => {
    const picked = await db
      .select({ id: events.id, campaignId: events.campaignId, type: events.type })
      .from(events)
      .where(and(isNull(events.dispatchedAt), eventIds ? anyOf(events.id, eventIds) : undefined))
      .orderBy(asc(events.seq))
      .limit(FAN_OUT_BATCH)
      .for('update', { skipLocked: true });
    if (picked.length === 0) return { events: 0, scheduled: [] };
    const now = ctx.clock.now();
    const endpoints = await db
      .select({
        id: webhookEndpoints.id,
        campaignId: webhookEndpoints.campaignId,
        eventTypes: webhookEndpoints.eventTypes,
        enabled: webhookEndpoints.enabled,
      })
      .from(webhookEndpoints)
      .where(anyOf(webhookEndpoints.campaignId, [...new Set(picked.map((e) => e.campaignId))]));
    const rows = picked.flatMap((e) =>
      endpoints
        .filter((ep) => ep.campaignId === e.campaignId && wantsEvent(ep, e.type))
        .map((ep) => ({
          id: messageIdFor(e.id, ep.id),
          endpointId: ep.id,
          campaignId: e.campaignId,
          eventId: e.id,
          eventType: e.type,
          status: 'PENDING' as const,
          nextAttemptAt: now,
          createdAt: now,
          updatedAt: now,
        })),
    );
    const created =
      rows.length === 0
        ? []
        : await db.insert(webhookMessages).values(rows).onConflictDoNothing().returning({
            messageId: webhookMessages.id,
            endpointId: webhookMessages.endpointId,
            generation: webhookMessages.generation,
          });
    await db
      .update(events)
      .set({ dispatchedAt: now })
      .where(
        anyOf(
          events.id,
          picked.map((e) => e.id),
        ),
      );
    const enabled = new Set(endpoints.filter((ep) => ep.enabled).map((ep) => ep.id));
    return {
      events: picked.length,
      scheduled: created
        .filter((m) => enabled.has(m.endpointId))
        .map(({ messageId, generation, endpointId }) => ({ messageId, generation, endpointId })),
    };
  });
}

/**
 * PENDING messages of enabled endpoints whose attempt is overdue by `graceMs`: a healthy dispatcher takes a
 * message within moments of its due time, so these may have lost their job (Redis lost data, a dispatcher
 * died between commit and enqueue). The sweep makes sure each has one.
 */
export async function findOverdueMessages(ctx: Ctx, graceMs: number, limit = 500): Promise<Scheduled[]> {
  const cutoff = new Date(ctx.clock.now().getTime() - graceMs);
  return ctx.db
    .select({ messageId: webhookMessages.id, generation: webhookMessages.generation })
    .from(webhookMessages)
    .innerJoin(webhookEndpoints, eq(webhookEndpoints.id, webhookMessages.endpointId))
    .where(
      and(
        eq(webhookMessages.status, 'PENDING'),
        lte(webhookMessages.nextAttemptAt, cutoff),
        eq(webhookEndpoints.enabled, true),
      ),
    )
    .orderBy(asc(webhookMessages.nextAttemptAt))
    .limit(limit);
}
