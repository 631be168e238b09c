import { anyOf, loyaltyActions, statusByKey, type Tx } from '@stampcard/db';
import { and, asc, eq, inArray } from 'drizzle-orm';

/**
 * The QUEUED actions a writer settles: those of `ids` (read by primary key, `statusByKey`), or every one of a
 * participant (a range of the index of QUEUED actions by participant).
 */
export type QueuedOf = { ids: readonly string[] } | { campaignId: string; participantId: string };

/**
 * The actions of `ids` that are still QUEUED, read by primary key (`statusByKey`): the one form of that condition,
 * for the worker's claim and the relay's second look. With the plain `status = 'QUEUED'` the planner may take the
 * index of QUEUED actions by participant and read the whole backlog for each batch (ledger-plan test).
 */
export const queuedByIds = (ids: readonly string[]) =>
  and(anyOf(loyaltyActions.id, ids), statusByKey(loyaltyActions.status, 'QUEUED'));

/**
 * Moves the QUEUED loyalty actions of `of` out of QUEUED (`set`: APPLIED, or REJECTED with its reason), inside
 * the caller's transaction. Their rows are locked first, in id order: the order every writer of the ledger
 * locks them in (the worker's batch, a participant's removal), so that two of them never deadlock, and an action
 * leaves QUEUED once: a writer that waited for the lock finds it moved on and skips it. Its request hash goes
 * with it: the hash only says an identical request is in flight (409) while it is QUEUED, and 65 bytes a row
 * kept for ever were a tenth of the ledger. One statement; answers the UPDATE, for the caller's `returning`.
 */
export function settleQueuedActions(
  db: Tx,
  of: QueuedOf,
  set: Pick<typeof loyaltyActions.$inferInsert, 'status' | 'appliedAt' | 'reason'>,
) {
  const which =
    'ids' in of
      ? queuedByIds(of.ids)
      : and(
          eq(loyaltyActions.campaignId, of.campaignId),
          eq(loyaltyActions.participantId, of.participantId),
          eq(loyaltyActions.status, 'QUEUED'),
        );
  return db
    .update(loyaltyActions)
    .set({ ...set, requestHash: null })
    .where(
      inArray(
        loyaltyActions.id,
        db
          .select({ id: loyaltyActions.id })
          .from(loyaltyActions)
          .where(which)
          .orderBy(asc(loyaltyActions.id))
          .for('update'),
      ),
    );
}
