import { loyaltyActions, type Tx } from '@stampcard/db';
import { and, asc, eq, inArray, type SQL } from 'drizzle-orm';

/**
 * Moves the QUEUED loyalty actions that `where` picks out of QUEUED (`set`: APPLIED, or REJECTED with its
 * reason), inside the caller's transaction. Their rows are locked first, in id order: the order every writer
 * of the ledger locks them in (the worker's batch, a participant's removal), so that two of them never
 * deadlock, and an action leaves QUEUED once: a writer that waited for the lock finds it moved on and skips it.
 * Its request hash goes with it: the hash only says an identical request is in flight (409) while it is
 * QUEUED, and 65 bytes a row kept for ever were a tenth of the ledger. One statement; answers the UPDATE, for
 * the caller's `returning`.
 */
export function settleQueuedActions(
  db: Tx,
  where: SQL | undefined,
  set: Pick<typeof loyaltyActions.$inferInsert, 'status' | 'appliedAt' | 'reason'>,
) {
  return db
    .update(loyaltyActions)
    .set({ ...set, requestHash: null })
    .where(
      inArray(
        loyaltyActions.id,
        db
          .select({ id: loyaltyActions.id })
          .from(loyaltyActions)
          .where(and(where, eq(loyaltyActions.status, 'QUEUED')))
          .orderBy(asc(loyaltyActions.id))
          .for('update'),
      ),
    );
}
