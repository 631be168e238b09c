import { type AnyColumn, type SQL, type SQLWrapper, sql } from 'drizzle-orm';

/**
 * Conditions written so that the planner takes the partial index a statement is meant to read, and no other.
 *
 * ANALYZE samples a table; run while nothing is in flight (the usual moment), it leaves every partial index of
 * rows in flight (pending messages, undispatched events) looking empty, and the planner then takes the smallest
 * one whose predicate the statement's conditions imply, whatever the statement looks up. Once many rows are in
 * flight, such a plan reads all of them for each row it wants (a fan-out of 128 events read 300 each; a claim of
 * 16 messages read 10,000). So an index of rows in flight that only one kind of statement should read has a
 * predicate only that statement states, and a statement that names its rows by key states its condition in a
 * form no such predicate matches. Each condition is written here once, for the index that declares it and for
 * the statements that state it (`packages/core/test/fan-out-plan.test.ts` reads the plans).
 */

/**
 * `status = 'PENDING'`, written `(status || '') = 'PENDING'`: it matches no index whose predicate is the plain
 * comparison (every pending message's, by due time or by endpoint), so a statement that names its messages by
 * id reads them by primary key. `status` is the column, or an alias's (`sql.raw('m.status')`).
 */
export const pendingByKey = (status: AnyColumn | SQLWrapper): SQL => sql`(${status} || '') = 'PENDING'`;

/**
 * `status = 'QUEUED'`, written `(status || '') = 'QUEUED'`: it matches neither index of the ledger's QUEUED rows
 * (by participant, and by request hash), so a statement that names its actions by id reads them by primary key.
 * With the plain comparison, the worker's claim of a batch of 32 read every QUEUED action of a backlog of 5,000
 * through the participants' index (`packages/core/test/ledger-plan.test.ts`).
 */
export const queuedByKey = (status: AnyColumn | SQLWrapper): SQL => sql`(${status} || '') = 'QUEUED'`;

/**
 * PENDING and ordered, the predicate of `webhook_messages_ordered_idx` (a pair's ordered messages still to
 * send, in sequence): `pendingByKey`'s form of the status, so that a look-up of a pair's messages can take that
 * index and no other pending one. The columns, or an alias's.
 */
export const pendingOrdered = (status: AnyColumn | SQLWrapper, ordered: AnyColumn | SQLWrapper): SQL =>
  sql`${pendingByKey(status)} and ${ordered}`;

/**
 * Not fanned out yet, in the sweep's order: the predicate of `events_undispatched_idx` (the oldest undispatched
 * events). `seq > 0` holds for every row (seq starts at 1); it is there so that only the sweep, which states it,
 * reads that index, and the fan-out's look-ups by id and by participant take their own. The columns, or an
 * alias's.
 */
export const undispatchedForSweep = (
  dispatchedAt: AnyColumn | SQLWrapper,
  seq: AnyColumn | SQLWrapper,
): SQL => sql`${dispatchedAt} is null and ${seq} > 0`;
