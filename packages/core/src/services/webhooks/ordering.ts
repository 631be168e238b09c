import { pendingOrdered, WAITING_AT, webhookMessages } from '@stampcard/db';
import { lt, sql } from 'drizzle-orm';
import type { Ctx } from '../../context';

/** A message's row, as `MessageRow` in `views.ts` (which imports this module). */
type MessageRow = typeof webhookMessages.$inferSelect;

/**
 * Ordered delivery per participant (`ordering: PARTICIPANT`), in one place: an ordered message behind an earlier
 * PENDING one of its (endpoint, participant) is made by the fan-out with `nextAttemptAt = WAITING_AT`; nothing
 * schedules it (`notWaiting`) until the end of the one before makes it due (`releaseNextOrdered`).
 */

/** Whether a message is an ordered one waiting for an earlier one of its participant. */
export const waits = (m: Pick<MessageRow, 'status' | 'nextAttemptAt'>) =>
  m.status === 'PENDING' && m.nextAttemptAt >= WAITING_AT;

/** The condition "not waiting", for what schedules messages (the sweep, a release, a replay). */
export const notWaiting = lt(webhookMessages.nextAttemptAt, WAITING_AT);

/** An (endpoint, participant) whose ordered messages go one after the other. */
export type OrderedKey = { endpointId: string; participantId: string };

/** The pairs of the ordered messages among `messages`. */
export const orderedKeys = (
  messages: readonly Pick<MessageRow, 'endpointId' | 'participantId' | 'ordered'>[],
): OrderedKey[] =>
  messages.flatMap((m) =>
    m.ordered && m.participantId !== null
      ? [{ endpointId: m.endpointId, participantId: m.participantId }]
      : [],
  );

/** An ordered message made due by the end of the one before it: its job to schedule, and its pair. */
export type Released = { messageId: string; generation: number; endpointId: string; participantId: string };

/**
 * The end of an ordered message (it succeeded, was dead-lettered: `parked`, or discarded) makes the next one of
 * its participant due, if that one waits: per (endpoint, participant) of `keys`, the oldest ordered message
 * still PENDING, found by the index of those. A dead-lettered predecessor's id goes with it (`previousId`, the
 * `webhook-previous-id` header), so the receiver sees the gap. In the ending's transaction: a crash before the
 * job is queued leaves a due message, which the sweep finds.
 */
export async function releaseNextOrdered(
  tx: Ctx,
  keys: readonly OrderedKey[],
  parked: string | null,
  now: Date,
): Promise<Released[]> {
  if (keys.length === 0) return [];
  const at = now.toISOString();
  const rows = await tx.db.execute<{
    id: string;
    generation: number;
    endpoint_id: string;
    participant_id: string;
  }>(sql`
    update ${webhookMessages} n
    set next_attempt_at = ${at}::timestamptz, previous_id = ${parked}, updated_at = ${at}::timestamptz
    from (
      select distinct on (w.endpoint_id, w.participant_id) w.id, w.event_at, w.next_attempt_at
      from ${webhookMessages} w
      join unnest(${sql.param(keys.map((k) => k.endpointId))}::text[], ${sql.param(keys.map((k) => k.participantId))}::text[])
        as k(endpoint_id, participant_id)
        on w.endpoint_id = k.endpoint_id and w.participant_id = k.participant_id
      where ${pendingOrdered(sql.raw('w.status'), sql.raw('w.ordered'))}
      order by w.endpoint_id, w.participant_id, w.sequence
    ) h
    where n.id = h.id and n.event_at = h.event_at and h.next_attempt_at = ${WAITING_AT.toISOString()}::timestamptz
    returning n.id, n.generation, n.endpoint_id, n.participant_id`);
  return rows.map((r) => ({
    messageId: r.id,
    generation: r.generation,
    endpointId: r.endpoint_id,
    participantId: r.participant_id,
  }));
}
