import { sql } from 'drizzle-orm';
import { bigint, index, integer, pgTable, text, timestamp } from 'drizzle-orm/pg-core';
import { accountKeyed } from './campaigns';

export const ERASURE_STATES = ['RUNNING', 'DONE'] as const;
export type ErasureState = (typeof ERASURE_STATES)[number];
/**
 * What an erasure scrubs next: the participant's stored events (newest first), then stored answers, then its
 * entries in the audit log (oldest first).
 */
export const ERASURE_PHASES = ['EVENTS', 'ANSWERS', 'AUDIT'] as const;
export type ErasurePhase = (typeof ERASURE_PHASES)[number];

/**
 * The erasure of a deleted participant (right to erasure), one row each, written by the deletion's transaction.
 * Its personal data leaves stored events and answers in bounded batches, the first in the deletion's
 * transaction, the rest each in a short transaction of its own (`participant-erasure.run` jobs). The row is
 * the erasure's durable state: a lost job or a dead worker is found by the relay's sweep (`touchedAt`), and
 * its next batch starts where the cursor says. It holds ids and counts only, never the person.
 */
const erasuresKey = accountKeyed('erasures');

export const erasures = pgTable(
  'erasures',
  {
    participantId: text('participant_id').primaryKey(),
    accountId: erasuresKey.column(),
    campaignId: text('campaign_id').notNull(),
    state: text('state').$type<ErasureState>().notNull(),
    phase: text('phase').$type<ErasurePhase>().notNull(),
    /**
     * Events are scrubbed newest first: the next batch takes those with a `seq` below this (null: all). In the
     * AUDIT phase, the audit log's entries are taken oldest first: those with an `id` above this (null: all).
     */
    cursorSeq: bigint('cursor_seq', { mode: 'bigint' }),
    /** Batches run so far, the deletion's own included: the next batch's number (and job id). */
    batches: integer('batches').notNull().default(0),
    erasedEvents: integer('erased_events').notNull().default(0),
    erasedAnswers: integer('erased_answers').notNull().default(0),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
    /** When its last batch committed: a RUNNING erasure untouched for long has lost its job. */
    touchedAt: timestamp('touched_at', { withTimezone: true, mode: 'date' }).notNull(),
    finishedAt: timestamp('finished_at', { withTimezone: true, mode: 'date' }),
  },
  (t) => [
    erasuresKey.foreignKey(t),
    // The relay's sweep: running erasures, least recently touched first.
    index('erasures_running_idx').on(t.touchedAt).where(sql`${t.state} = 'RUNNING'`),
  ],
);
