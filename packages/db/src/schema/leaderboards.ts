import { integer, pgTable, primaryKey, text } from 'drizzle-orm/pg-core';
import { campaigns } from './campaigns';

/**
 * How many participants of a campaign have each count, per leaderboard ("board"): `ALL` (all-time counts) or a
 * month `YYYY-MM` (the counts of that UTC month). Only counts above 0 are kept. A participant's rank is the sum
 * of the buckets above its count plus the participants with its count who joined earlier (an index range of
 * `participants`), so a rank costs the size of its tie, not of the campaign.
 *
 * The worker moves a participant between buckets in the transaction that changes its counts, and removing a
 * participant takes it out of its buckets; nothing else changes counts. A month's board is complete when that
 * month ends and is never rolled: last month's leaderboard is its board, whatever month the participants' rows
 * were last written in.
 */
export const leaderboardBuckets = pgTable(
  'leaderboard_buckets',
  {
    campaignId: text('campaign_id')
      .notNull()
      .references(() => campaigns.id, { onDelete: 'cascade' }),
    /** `ALL`, or a month `YYYY-MM` (UTC). */
    board: text('board').notNull(),
    /** A loyalty action count, above 0. */
    score: integer('score').notNull(),
    participants: integer('participants').notNull(),
  },
  (t) => [primaryKey({ name: 'leaderboard_buckets_pk', columns: [t.campaignId, t.board, t.score] })],
);
