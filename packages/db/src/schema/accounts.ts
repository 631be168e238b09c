import { sql } from 'drizzle-orm';
import { index, integer, jsonb, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';

export const PLANS = ['FREE', 'STARTER', 'GROWTH', 'ENTERPRISE'] as const;
export type Plan = (typeof PLANS)[number];
export const ROLES = ['ADMIN', 'MEMBER'] as const;
export type Role = (typeof ROLES)[number];

export type RateLimitOverrides = {
  second?: number;
  minute?: number;
  hour?: number;
  concurrency?: number;
  slowdownAfter?: number;
};

/** A business. Its participant quota counts participants across all its campaigns. */
export const accounts = pgTable('accounts', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  plan: text('plan').$type<Plan>().notNull(),
  /** null: no quota. */
  participantQuota: integer('participant_quota'),
  /** Participants across the account's campaigns, kept in step with inserts and deletes (quota check). */
  participantCount: integer('participant_count').notNull().default(0),
  rateLimits: jsonb('rate_limits').$type<RateLimitOverrides>(),
  createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
});

export const users = pgTable(
  'users',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    email: text('email').notNull(),
    role: text('role').$type<Role>().notNull(),
    /** Campaigns a MEMBER may reach over the API; ignored for ADMIN. */
    campaignIds: text('campaign_ids').array().notNull().default(sql`'{}'::text[]`),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (t) => [uniqueIndex('users_account_email_uq').on(t.accountId, t.email)],
);

/** Only a SHA-256 of each key is stored; the key itself is shown once. */
export const apiKeys = pgTable(
  'api_keys',
  {
    id: text('id').primaryKey(),
    userId: text('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    keyHash: text('key_hash').notNull(),
    /** First characters of the key, to recognise it in a list. */
    keyPrefix: text('key_prefix').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    revokedAt: timestamp('revoked_at', { withTimezone: true, mode: 'date' }),
  },
  (t) => [uniqueIndex('api_keys_hash_uq').on(t.keyHash), index('api_keys_user_idx').on(t.userId)],
);
