import { sql } from 'drizzle-orm';
import { boolean, index, integer, jsonb, pgTable, text, timestamp } from 'drizzle-orm/pg-core';
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
  // An account's campaigns, and their page by id byte by byte (the operator's list).
  (t) => [index('campaigns_account_page_idx').on(t.accountId, sql`(${t.id} collate "C")`)],
);

export const rewards = pgTable(
  'rewards',
  {
    id: text('id').primaryKey(),
    campaignId: text('campaign_id')
      .notNull()
      .references(() => campaigns.id, { onDelete: 'cascade' }),
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
  // A campaign's rewards, and their page by id byte by byte (the operator's list).
  (t) => [index('rewards_campaign_page_idx').on(t.campaignId, sql`(${t.id} collate "C")`)],
);
