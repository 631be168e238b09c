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
 * the statements that state it (`packages/core/test/*-plan*.test.ts` read the plans).
 */

/** A status that a partial index's predicate names (`status = '…'`, or `state`, `backlog_state`). */
export type IndexedStatus = 'PENDING' | 'QUEUED' | 'UNREVIEWED' | 'RUNNING';

/**
 * `status = value`, written `(status || '') = value`: it matches no partial index whose predicate is the plain
 * comparison (every pending message's, by due time or by endpoint; every QUEUED action's, by participant or by
 * request hash; every form submission waiting for review; every erasure and every endpoint's backlog operation
 * RUNNING, for the relay's sweep), so a statement that names its rows by key reads them
 * by that key. With the plain comparison, a claim of 16 messages read 10,000 pending ones after a replay, and the
 * worker's claim of a batch of 32 read every QUEUED action of a backlog of 5,000 (its time growing with the
 * backlog: 6, 26 and 108 ms at 10,000, 50,000 and 200,000 against 3-4 ms by key). `status` is the column, or an
 * alias's (`sql.raw('m.status')`).
 */
export const statusByKey = (status: AnyColumn | SQLWrapper, value: IndexedStatus): SQL =>
  sql`(${status} || '') = ${sql.raw(`'${value}'`)}`;

/**
 * `approved = false`, written `approved::int = 0`: it matches no index of the rewards waiting for an operator's
 * approval (`participant_rewards_waiting_idx`), so a statement that names its reward reads it by primary key.
 */
export const notApprovedByKey = (approved: AnyColumn | SQLWrapper): SQL => sql`${approved}::int = 0`;

/**
 * PENDING and ordered, the predicate of `webhook_messages_ordered_idx` (a pair's ordered messages still to
 * send, in sequence): `statusByKey`'s form of the status, so that a look-up of a pair's messages can take that
 * index and no other pending one. The columns, or an alias's.
 */
export const pendingOrdered = (status: AnyColumn | SQLWrapper, ordered: AnyColumn | SQLWrapper): SQL =>
  sql`${statusByKey(status, 'PENDING')} and ${ordered}`;

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
