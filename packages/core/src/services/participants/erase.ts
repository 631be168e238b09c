import { events, scrubIdempotentAnswers, webhookAttempts, webhookMessages } from '@stampcard/db';
import { sql } from 'drizzle-orm';
import type { Ctx } from '../../context';
import { eraseParticipant } from '../../rules/erasure';

/** Events scrubbed per statement: a participant with a long history is erased in several bounded steps. */
const ERASE_BATCH = 500;

/**
 * Erases a deleted participant's personal data from what Stampcard keeps after it, inside the caller's
 * transaction (the one that deletes the participant, so an erasure is all or nothing):
 *
 * - its stored events (`events.data`, found through `events_participant_idx`, `ERASE_BATCH` at a time in `seq`
 *   order): the participant's email, names, notes, metadata and form answers (`eraseParticipant`). Webhook
 *   messages are built from their event when they are sent, so a pending or replayed message carries the
 *   erased copy;
 * - what receivers answered to those events' messages (`webhook_attempts.response_excerpt`: a receiver may echo
 *   the body), set to null;
 * - the stored `Idempotency-Key` answers that show it (tagged with its id when recorded). Their request paths
 *   hold no email: a key row stores the path as logged, an email segment as `:email`.
 *
 * Its form submissions and participant rewards go with its row (the foreign keys cascade). Ids, counts, statuses
 * and times stay, so the ledger still adds up. Answers how many events and answers it rewrote.
 */
export async function eraseParticipantData(
  ctx: Ctx,
  campaignId: string,
  participantId: string,
): Promise<{ events: number; answers: number }> {
  const { db } = ctx;
  let erasedEvents = 0;
  let after = '0';
  for (;;) {
    // `seq` is read as text (a bigint) under another name: ordered by that name, it would sort as text.
    const rows = await db.execute<{ at: string; id: string; data: unknown }>(sql`
      select e.seq::text as at, e.id, e.data from ${events} e
      where (e.data #>> '{participant,id}') = ${participantId} and e.campaign_id = ${campaignId}
        and e.seq > ${after}::bigint
      order by (e.data #>> '{participant,id}'), e.seq
      limit ${ERASE_BATCH}`);
    if (rows.length === 0) break;
    after = rows.at(-1)!.at;
    const changed = rows.flatMap((r) => {
      const erased = eraseParticipant(r.data, participantId);
      return erased.changed ? [{ seq: r.at, data: erased.value }] : [];
    });
    if (changed.length > 0) {
      await db.execute(sql`
        update ${events} e set data = u.data
        from jsonb_to_recordset(${JSON.stringify(changed)}::jsonb) as u(seq bigint, data jsonb)
        where e.seq = u.seq`);
    }
    await db.execute(sql`
      update ${webhookAttempts} set response_excerpt = null
      where response_excerpt is not null and message_id in (
        select m.id from ${webhookMessages} m
        where m.event_id in (select jsonb_array_elements_text(${JSON.stringify(rows.map((r) => r.id))}::jsonb)))`);
    erasedEvents += changed.length;
    if (rows.length < ERASE_BATCH) break;
  }
  const answers = await scrubIdempotentAnswers(db, participantId, (body) => eraseJson(body, participantId));
  return { events: erasedEvents, answers };
}

/** A stored JSON answer without the participant; only JSON answers are tagged, anything else keeps nothing. */
function eraseJson(body: string, participantId: string): string {
  try {
    return JSON.stringify(eraseParticipant(JSON.parse(body), participantId).value);
  } catch {
    return '';
  }
}
