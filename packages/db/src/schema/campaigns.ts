import { sql } from 'drizzle-orm';
import {
  boolean,
  foreignKey,
  index,
  integer,
  jsonb,
  type PgColumn,
  pgTable,
  text,
  timestamp,
  uniqueIndex,
} from 'drizzle-orm/pg-core';
import { accounts } from './accounts';

export const CAMPAIGN_STATUSES = ['DRAFT', 'IN_PROGRESS', 'COMPLETE', 'DELETED'] as const;
export type CampaignStatus = (typeof CAMPAIGN_STATUSES)[number];

export type AntiFraudSettings = {
  level?: 'OFF' | 'STANDARD' | 'STRICT';
  blacklist?: string[];
  whitelist?: string[];
  ipThrottle?: number;
};
export type PointsConversion = { metadataKey: string; threshold: number; rewardId: string };
export type Metadata = Record<string, string | number | boolean | null>;

export type FormField = {
  key: string;
  label?: string;
  placeholder?: string;
  type?: string;
  isRequired?: boolean;
  isVisible?: boolean;
};
export type FormMessages = {
  required?: string;
  reCaptchaRequired?: string;
  success?: string;
  error?: string;
  alreadySubmitted?: string;
};

export const campaigns = pgTable(
  'campaigns',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    status: text('status').$type<CampaignStatus>().notNull(),
    currencyISO: text('currency_iso').notNull(),
    requireRewardApproval: boolean('require_reward_approval').notNull().default(false),
    antiFraud: jsonb('anti_fraud').$type<AntiFraudSettings>(),
    pointsConversion: jsonb('points_conversion').$type<PointsConversion>(),
    /** Counters updated in place by the API (participants) and the worker (actions, winners). */
    loyaltyActionCount: integer('loyalty_action_count').notNull().default(0),
    participantCount: integer('participant_count').notNull().default(0),
    winnerCount: integer('winner_count').notNull().default(0),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (t) => [
    // An account's campaigns, and their page by id byte by byte (the operator's list).
    index('campaigns_account_page_idx').on(t.accountId, sql`(${t.id} collate "C")`),
    // The target of the (account, campaign) foreign keys of the tables keyed by account (see `accountKeyed`).
    uniqueIndex('campaigns_account_id_uq').on(t.accountId, t.id),
  ],
);

/**
 * A campaign's row keyed by its account too: `account_id` (its campaign's, set once) and the foreign key to
 * its campaign on both columns, so the account is the campaign's and no key crosses accounts. The distribution
 * column of the move to Citus (docs/scaling.md), made now on the tables where it costs nothing.
 */
export function accountKeyed<Table extends string>(table: Table) {
  return {
    column: () => text('account_id').notNull(),
    foreignKey: (t: { accountId: PgColumn; campaignId: PgColumn }) =>
      foreignKey({
        name: `${table}_campaign_fk`,
        columns: [t.accountId, t.campaignId],
        foreignColumns: [campaigns.accountId, campaigns.id],
      }).onDelete('cascade'),
  };
}

const rewardsKey = accountKeyed('rewards');

export const rewards = pgTable(
  'rewards',
  {
    id: text('id').primaryKey(),
    accountId: rewardsKey.column(),
    campaignId: text('campaign_id').notNull(),
    title: text('title'),
    description: text('description'),
    subdescription: text('subdescription'),
    instructions: text('instructions'),
    cta: text('cta'),
    submissionType: text('submission_type').$type<'URL' | 'FORM'>(),
    submissionExampleUrl: text('submission_example_url'),
    submissionFormUrl: text('submission_form_url'),
    submissionFormFields: jsonb('submission_form_fields').$type<FormField[]>(),
    submissionFormButtonText: text('submission_form_button_text'),
    submissionFormMessages: jsonb('submission_form_messages').$type<FormMessages>(),
    isUnlimited: boolean('is_unlimited').notNull().default(false),
    limit: integer('limit').notNull().default(1),
    conversionsRequired: integer('conversions_required').notNull().default(1),
    limitDuration: text('limit_duration').$type<'IN_TOTAL' | 'PER_MONTH'>().notNull().default('IN_TOTAL'),
    numberOfWinners: integer('number_of_winners'),
    couponCode: text('coupon_code'),
    imageUrl: text('image_url'),
    order: integer('order'),
    metadata: jsonb('metadata').$type<Metadata>(),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (t) => [
    rewardsKey.foreignKey(t),
    // A campaign's rewards, and their page by id byte by byte (the operator's list).
    index('rewards_campaign_page_idx').on(t.campaignId, sql`(${t.id} collate "C")`),
  ],
);
