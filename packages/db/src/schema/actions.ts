import { sql } from 'drizzle-orm';
import {
  bigserial,
  boolean,
  customType,
  index,
  jsonb,
  pgTable,
  text,
  timestamp,
  uniqueIndex,
} from 'drizzle-orm/pg-core';
import { undispatchedForSweep } from '../index-conditions';
import { campaigns, type Metadata, rewards } from './campaigns';
import { participants } from './participants';

export const ACTION_STATUSES = ['QUEUED', 'APPLIED', 'REJECTED'] as const;
export type ActionStatus = (typeof ACTION_STATUSES)[number];

/**
 * The ledger of accepted loyalty actions. A row is written before the API answers 200, so PostgreSQL,
 * not Redis, is the record: the worker moves it QUEUED → APPLIED exactly once.
 */
export const loyaltyActions = pgTable(
  'loyalty_actions',
  {
    id: text('id').primaryKey(),
    campaignId: text('campaign_id')
      .notNull()
      .references(() => campaigns.id, { onDelete: 'cascade' }),
    participantId: text('participant_id').notNull(),
    rewardId: text('reward_id').notNull(),
    status: text('status').$type<ActionStatus>().notNull(),
    metadata: jsonb('metadata').$type<Metadata>(),
    /** Hash of (API key, method, path, body): an identical request while this one is QUEUED is a 409. */
    requestHash: text('request_hash'),
    unlockedRewardIds: text('unlocked_reward_ids').array().notNull().default(sql`'{}'::text[]`),
    reason: text('reason'),
    /** The participant import that carried this count over (`loyaltyActionCount.<rewardId>`), if one did. */
    importId: text('import_id'),
    /** Applied without events (an import's `silent=true`): counted and unlocking, never sent as webhooks. */
    silent: boolean('silent').notNull().default(false),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
    appliedAt: timestamp('applied_at', { withTimezone: true, mode: 'date' }),
  },
  (t) => [
    uniqueIndex('loyalty_actions_inflight_uq')
      .on(t.requestHash)
      .where(sql`${t.status} = 'QUEUED' and ${t.requestHash} is not null`),
    // The actions still to apply (QUEUED rows only: a few entries at any time, not one per row of the ledger), by
    // participant, oldest first: a batch applies a participant's earlier ones before its own (in the order
    // accepted), and an import counts them. The relay's look-up of the oldest reads all of it (the backlog) and
    // sorts: one index of QUEUED rows, so the planner has no other to choose for a participant's range.
    index('loyalty_actions_participant_queued_idx')
      .on(t.participantId, t.createdAt)
      .where(sql`${t.status} = 'QUEUED'`),
    // The operator console's actions accepted and applied per minute: a range of the last hour of each. Rows
    // arrive in time order, so a BRIN index (a few pages for millions of rows) finds that range, where a btree
    // cost 24 bytes a row each.
    index('loyalty_actions_created_brin').using('brin', t.createdAt),
    index('loyalty_actions_applied_brin').using('brin', t.appliedAt),
    // A campaign's ledger in the order it was accepted: its export, a page at a time from any point.
    index('loyalty_actions_campaign_created_idx').on(t.campaignId, t.createdAt, sql`${t.id} collate "C"`),
  ],
);

export const PARTICIPANT_REWARD_STATUSES = ['PENDING', 'FULFILLED'] as const;
export type ParticipantRewardStatus = (typeof PARTICIPANT_REWARD_STATUSES)[number];

export const participantRewards = pgTable(
  'participant_rewards',
  {
    id: text('id').primaryKey(),
    campaignId: text('campaign_id')
      .notNull()
      .references(() => campaigns.id, { onDelete: 'cascade' }),
    participantId: text('participant_id')
      .notNull()
      .references(() => participants.id, { onDelete: 'cascade' }),
    rewardId: text('reward_id')
      .notNull()
      .references(() => rewards.id, { onDelete: 'cascade' }),
    actionId: text('action_id'),
    status: text('status').$type<ParticipantRewardStatus>().notNull().default('PENDING'),
    approved: boolean('approved').notNull().default(false),
    approvedAt: timestamp('approved_at', { withTimezone: true, mode: 'date' }),
    isFulfilled: boolean('is_fulfilled').notNull().default(false),
    fulfilledAt: timestamp('fulfilled_at', { withTimezone: true, mode: 'date' }),
    unread: boolean('unread').notNull().default(true),
    /** `YYYY-MM` (UTC) of the unlock: PER_MONTH limits and the monthly winners cap count by it. */
    earnedMonth: text('earned_month').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
  },
  (t) => [
    index('participant_rewards_participant_idx').on(t.participantId, t.rewardId, t.earnedMonth),
    index('participant_rewards_reward_month_idx').on(t.rewardId, t.earnedMonth),
    // A participant's rewards in the order the paged list walks them (oldest first, ties by id byte by byte),
    // and backwards the newest few a Participant object embeds: a range of the index either way, never a sort
    // of the whole history.
    index('participant_rewards_participant_created_idx').on(
      t.participantId,
      t.createdAt,
      sql`(${t.id} collate "C")`,
    ),
    // What waits for an operator's approval, oldest first, across campaigns (the console's Reviews).
    index('participant_rewards_waiting_idx')
      .on(t.createdAt, sql`(${t.id} collate "C")`)
      .where(sql`${t.approved} = false`),
  ],
);

export const FORM_SUBMISSION_STATUSES = ['UNREVIEWED', 'REVIEWED'] as const;

export const formSubmissions = pgTable(
  'form_submissions',
  {
    id: text('id').primaryKey(),
    campaignId: text('campaign_id')
      .notNull()
      .references(() => campaigns.id, { onDelete: 'cascade' }),
    participantId: text('participant_id')
      .notNull()
      .references(() => participants.id, { onDelete: 'cascade' }),
    rewardId: text('reward_id')
      .notNull()
      .references(() => rewards.id, { onDelete: 'cascade' }),
    status: text('status').$type<(typeof FORM_SUBMISSION_STATUSES)[number]>().notNull(),
    formData: jsonb('form_data').$type<Record<string, string>>().notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
    reviewedAt: timestamp('reviewed_at', { withTimezone: true, mode: 'date' }),
  },
  (t) => [
    index('form_submissions_campaign_idx').on(t.campaignId, t.status),
    // The list's order (oldest first, then id byte-wise), and the one-UNREVIEWED check of a participant.
    index('form_submissions_campaign_created_idx').on(t.campaignId, t.createdAt, sql`${t.id} collate "C"`),
    index('form_submissions_participant_reward_idx').on(t.participantId, t.rewardId, t.status),
    // What waits for review, oldest first, across campaigns (the console's Reviews).
    index('form_submissions_waiting_idx')
      .on(t.createdAt, sql`(${t.id} collate "C")`)
      .where(sql`${t.status} = 'UNREVIEWED'`),
  ],
);

/** PostgreSQL's 64-bit transaction id (`xid8`), read as a decimal string. */
const xid8 = customType<{ data: string; driverData: string }>({ dataType: () => 'xid8' });

/**
 * The outbox: every event is written in the transaction of the change that causes it. `seq` orders the
 * dispatcher's work; `dispatchedAt` is set once it has fanned the event out to endpoints. `txId` is the id
 * of the transaction that wrote it: the public feed orders by (txId, seq) and shows only events of
 * transactions older than every one still running, so an event that commits late can never appear behind a
 * cursor a reader already passed (a `seq` taken early can commit after a larger one).
 *
 * Partitioned by week of `createdAt` (migration 0023; see `PARTITIONED_TABLES`): a week past
 * `EVENT_RETENTION_DAYS` is dropped whole by the worker.
 */
export const events = pgTable(
  'events',
  {
    seq: bigserial('seq', { mode: 'number' }).notNull(),
    id: text('id').notNull(),
    campaignId: text('campaign_id')
      .notNull()
      .references(() => campaigns.id, { onDelete: 'cascade' }),
    type: text('type').notNull(),
    data: jsonb('data').$type<Record<string, unknown>>().notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
    dispatchedAt: timestamp('dispatched_at', { withTimezone: true, mode: 'date' }),
    txId: xid8('tx_id').notNull().default(sql`pg_current_xact_id()`),
  },
  (t) => [
    // Its look-ups by id. Not unique: a partitioned table's unique index must hold its partition key, and ids
    // are unique by construction (20 random characters).
    index('events_id_idx').on(t.id),
    // The feed's order, and the campaign's events when it is deleted.
    index('events_campaign_tx_seq_idx').on(t.campaignId, t.txId, t.seq),
    // The sweep's order: the oldest events not fanned out yet. Its predicate is `undispatchedForSweep`, which only
    // the sweep states: with plain `dispatched_at is null`, the planner took this index for the fan-out's look-ups
    // by id and by participant whenever ANALYZE ran with no event in flight, reading every undispatched event for
    // each (40 ms of a 100 ms fan-out of 128 events with 300 in flight, and quadratic in a backlog).
    index('events_undispatched_idx').on(t.seq).where(undispatchedForSweep(t.dispatchedAt, t.seq)),
    // The fan-out's order per participant: whether an earlier event of a participant is still to fan out.
    index('events_undispatched_participant_idx')
      .on(sql`(${t.data} #>> '{participant,id}')`, t.seq)
      .where(sql`${t.dispatchedAt} is null and (${t.data} #>> '{participant,id}') is not null`),
    // Erasure finds a deleted participant's events by the participant they show, in `seq` order, in batches
    // (see `services/participants/erase.ts` in core). Events that show no participant are not in it.
    index('events_participant_idx')
      .on(sql`(${t.data} #>> '{participant,id}')`, t.seq)
      .where(sql`(${t.data} #>> '{participant,id}') is not null`),
  ],
);
