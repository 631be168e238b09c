import { sql } from 'drizzle-orm';
import { index, integer, jsonb, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { campaigns, type Metadata } from './campaigns';

export const FRAUD_RISK_LEVELS = ['LOW', 'MEDIUM', 'HIGH'] as const;
export type FraudRiskLevel = (typeof FRAUD_RISK_LEVELS)[number];
/** The seed's `fraudReasonCode` vocabulary. */
export const FRAUD_REASON_CODES = [
  'UNIQUE_IDENTITY',
  'DUPLICATE_EMAIL',
  'DUPLICATE_IDENTITY',
  'SIMILAR_EMAIL',
  'SIMILAR_FIRST_NAME',
  'SIMILAR_LAST_NAME',
  'MANUAL_UPDATE',
  'WHITELISTED',
  'BLACKLIST_MATCH',
  'BLOCKED_IP',
] as const;
export type FraudReasonCode = (typeof FRAUD_REASON_CODES)[number];
export const PARTICIPANT_SOURCES = ['PARTICIPANT', 'DIRECT', 'IMPORT', 'MANUAL'] as const;
export type ParticipantSource = (typeof PARTICIPANT_SOURCES)[number];

export const participants = pgTable(
  'participants',
  {
    id: text('id').primaryKey(),
    campaignId: text('campaign_id')
      .notNull()
      .references(() => campaigns.id, { onDelete: 'cascade' }),
    /** Stored lower-cased and trimmed: one participant per address and campaign. */
    email: text('email').notNull(),
    /**
     * The email as anti-fraud compares duplicates (`emailKey` in core: NFKC, no `+tag`, no dots at gmail.com
     * and googlemail.com). Null only for rows written before it existed and not backfilled.
     */
    emailKey: text('email_key'),
    firstName: text('first_name'),
    lastName: text('last_name'),
    ipAddress: text('ip_address'),
    fingerprint: text('fingerprint'),
    loyaltyActionCount: integer('loyalty_action_count').notNull().default(0),
    /**
     * Monthly figures belong to `countsMonth` (`YYYY-MM`, UTC). They roll lazily: the next write in a
     * later month moves them to `prev…` (or zero when a month was skipped); reads apply the same rule.
     */
    countsMonth: text('counts_month').notNull(),
    monthlyLoyaltyActionCount: integer('monthly_loyalty_action_count').notNull().default(0),
    prevMonthlyLoyaltyActionCount: integer('prev_monthly_loyalty_action_count').notNull().default(0),
    loyaltyActionCountsPerReward: jsonb('loyalty_action_counts_per_reward')
      .$type<Record<string, number>>()
      .notNull()
      .default(sql`'{}'::jsonb`),
    monthlyLoyaltyActionCountsPerReward: jsonb('monthly_loyalty_action_counts_per_reward')
      .$type<Record<string, number>>()
      .notNull()
      .default(sql`'{}'::jsonb`),
    /** Approved rewards held; isWinner = approvedRewardCount > 0. */
    approvedRewardCount: integer('approved_reward_count').notNull().default(0),
    /**
     * Rewards earned and not removed, approved or not (`rewardCount`): kept in place by whatever adds or removes
     * a participant reward, so that a read shows the total without counting a history that may run to thousands.
     */
    rewardCount: integer('reward_count').notNull().default(0),
    fraudRiskLevel: text('fraud_risk_level').$type<FraudRiskLevel>().notNull().default('LOW'),
    fraudReasonCode: text('fraud_reason_code').$type<FraudReasonCode>().notNull().default('UNIQUE_IDENTITY'),
    loyaltyActionSource: text('loyalty_action_source').$type<ParticipantSource>().notNull(),
    notes: text('notes'),
    metadata: jsonb('metadata').$type<Metadata>(),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull(),
  },
  (t) => [
    uniqueIndex('participants_campaign_email_uq').on(t.campaignId, t.email),
    // Leaderboards, one index each, in rank order: count descending (negated, so that one row comparison
    // `(-count, created_at, id) > cursor` is the keyset and a rank is a range count), ties by earlier join. The
    // count itself closes each key so that a rank is counted by an index-only scan. Ids compare byte by byte.
    // Monthly counts belong to `counts_month`, hence its place in the monthly ones; rows without a count are
    // left out of those. See `packages/core/src/services/leaderboard/`.
    index('participants_rank_idx').on(
      t.campaignId,
      sql`(-${t.loyaltyActionCount})`,
      t.createdAt,
      sql`(${t.id} collate "C")`,
      t.loyaltyActionCount,
    ),
    index('participants_monthly_rank_idx')
      .on(
        t.campaignId,
        t.countsMonth,
        sql`(-${t.monthlyLoyaltyActionCount})`,
        t.createdAt,
        sql`(${t.id} collate "C")`,
        t.monthlyLoyaltyActionCount,
      )
      .where(sql`${t.monthlyLoyaltyActionCount} > 0`),
    index('participants_prev_monthly_rank_idx')
      .on(
        t.campaignId,
        t.countsMonth,
        sql`(-${t.prevMonthlyLoyaltyActionCount})`,
        t.createdAt,
        sql`(${t.id} collate "C")`,
        t.prevMonthlyLoyaltyActionCount,
      )
      .where(sql`${t.prevMonthlyLoyaltyActionCount} > 0`),
    // Anti-fraud's one look-up for a new participant: the campaign's others with its email key or its
    // fingerprint (a BitmapOr of these two).
    index('participants_email_key_idx').on(t.campaignId, t.emailKey),
    // The operator's review list: HIGH, then MEDIUM, then LOW, then id byte by byte (the query writes the same
    // rank expression, text for text).
    index('participants_risk_review_idx').on(
      t.campaignId,
      sql`(case ${t.fraudRiskLevel} when 'HIGH' then 0 when 'MEDIUM' then 1 else 2 end)`,
      sql`(${t.id} collate "C")`,
    ),
    // A campaign's participants by id byte by byte: the public list's and the console's pages (`listParticipants`),
    // read in order rather than sorted.
    index('participants_page_idx').on(t.campaignId, sql`(${t.id} collate "C")`),
    // The console's search by name: a prefix of the first or the last name, any case (its email prefix is read
    // through participants_campaign_email_uq). Partial: a participant without the name is not in it.
    index('participants_first_name_idx')
      .on(t.campaignId, sql`lower(${t.firstName})`)
      .where(sql`${t.firstName} is not null`),
    index('participants_last_name_idx')
      .on(t.campaignId, sql`lower(${t.lastName})`)
      .where(sql`${t.lastName} is not null`),
    index('participants_fingerprint_idx')
      .on(t.campaignId, t.fingerprint)
      .where(sql`${t.fingerprint} is not null`),
  ],
);
