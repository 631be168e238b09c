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

/**
 * A business. Its participant quota counts participants across all its campaigns.
 *
 * The operator lists (accounts, an account's users, API keys, a campaign's rewards) page by id byte by byte
 * (`packages/core/src/services/operator/page.ts`): each has an index in that order.
 */
export const accounts = pgTable(
  'accounts',
  {
    id: text('id').primaryKey(),
    name: text('name').notNull(),
    plan: text('plan').$type<Plan>().notNull(),
    /** null: no quota. */
    participantQuota: integer('participant_quota'),
    /** Participants across the account's campaigns, kept in step with inserts and deletes (quota check). */
    participantCount: integer('participant_count').notNull().default(0),
    rateLimits: jsonb('rate_limits').$type<RateLimitOverrides>(),
    /** The origins whose pages may embed the account's portal in a frame (CSP `frame-ancestors`). */
    frameAncestors: text('frame_ancestors').array().notNull().default(sql`'{}'::text[]`),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (t) => [index('accounts_page_idx').on(sql`(${t.id} collate "C")`)],
);

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
  (t) => [
    uniqueIndex('users_account_email_uq').on(t.accountId, t.email),
    index('users_account_page_idx').on(t.accountId, sql`(${t.id} collate "C")`),
  ],
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
  (t) => [
    uniqueIndex('api_keys_hash_uq').on(t.keyHash),
    // A user's keys by id (the user's list, and the cascade from users); every key by id; a prefix's keys.
    index('api_keys_user_page_idx').on(t.userId, sql`(${t.id} collate "C")`),
    index('api_keys_page_idx').on(sql`(${t.id} collate "C")`),
    index('api_keys_prefix_idx').on(sql`(${t.keyPrefix} collate "C")`),
  ],
);
