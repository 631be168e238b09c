import { events, scrubIdempotentAnswers, webhookAttempts, webhookMessages } from '@stampcard/db';
import { sql } from 'drizzle-orm';
import type { Ctx } from '../../context';
import { ERASED_PARTICIPANT, ERASED_SUBMISSION, eraseParticipant } from '../../rules/erasure';

/**
 * Events scrubbed per statement: a participant with a long history is erased in several bounded statements.
 * Measured on a busy 2-core machine: 5,000 took 0.65 to 0.9 s (every index of `events` gets the new row
 * version), so 2,000 stays far inside the 3 s statement timeout.
 */
const ERASE_BATCH = 2000;

/**
 * Erases a deleted participant's personal data from what Stampcard keeps after it, inside the caller's
 * transaction (the one that deletes the participant, so an erasure is all or nothing):
 *
 * - its stored events (`events.data`, found through `events_participant_idx`, `ERASE_BATCH` at a time in `seq`
 *   order, each batch one statement that never carries the data out of PostgreSQL): an event shows a person
 *   under `participant` (merged with `ERASED_PARTICIPANT`) and, for the form events, `formSubmission` (merged
 *   with `ERASED_SUBMISSION`): the rule of `eraseParticipant`, on the shapes events have. Webhook messages are
 *   built from their event when they are sent, so a pending or replayed message carries the erased copy;
 * - what receivers answered to those events' messages (`webhook_attempts.response_excerpt`: a receiver may echo
 *   the body), set to null, in the same statement;
 * - the stored `Idempotency-Key` answers that show it (tagged with its id when recorded), by `eraseParticipant`.
 *   Their request paths hold no email: a key row stores the path as logged, an email segment as `:email`.
 *
 * Its form submissions and participant rewards go with its row (the foreign keys cascade). Ids, counts, statuses
 * and times stay, so the ledger still adds up. Answers how many events and answers it rewrote.
 */
export async function eraseParticipantData(
  ctx: Ctx,
  campaignId: string,
  participantId: string,
  /** Told after each batch of events: a caller with a deadline may count erasure's progress as such. */
  onBatch?: () => void,
): Promise<{ events: number; answers: number }> {
  const { db } = ctx;
  const erasedParticipant = JSON.stringify(ERASED_PARTICIPANT);
  const erasedSubmission = JSON.stringify(ERASED_SUBMISSION);
  let erasedEvents = 0;
  let after = '0';
  for (;;) {
    const [done] = await db.execute<{ n: number; last: string | null }>(sql`
      with batch as (
        select e.seq, e.id from ${events} e
        where (e.data #>> '{participant,id}') = ${participantId} and e.campaign_id = ${campaignId}
          and e.seq > ${after}::bigint
        order by (e.data #>> '{participant,id}'), e.seq
        limit ${ERASE_BATCH}
      ), scrubbed as (
        update ${events} e
        set data = e.data
          || jsonb_build_object('participant', (e.data -> 'participant') || ${erasedParticipant}::jsonb)
          || case when (e.data #>> '{formSubmission,participantId}') = ${participantId}
               then jsonb_build_object('formSubmission', (e.data -> 'formSubmission') || ${erasedSubmission}::jsonb)
               else '{}'::jsonb end
        from batch b where e.seq = b.seq
        returning 1
      ), answered as (
        update ${webhookAttempts} a set response_excerpt = null
        from ${webhookMessages} m, batch b
        where m.event_id = b.id and a.message_id = m.id and a.response_excerpt is not null
        returning 1
      )
      select (select count(*) from scrubbed)::int as n, (select max(seq) from batch)::text as last`);
    const n = done?.n ?? 0;
    erasedEvents += n;
    onBatch?.();
    if (n < ERASE_BATCH || !done?.last) break;
    after = done.last;
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
