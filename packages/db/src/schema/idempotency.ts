import { sql } from 'drizzle-orm';
import { index, integer, jsonb, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';

export const IDEMPOTENCY_STATES = ['RUNNING', 'DONE'] as const;
export type IdempotencyState = (typeof IDEMPOTENCY_STATES)[number];

/** How long an `Idempotency-Key` holds its request and answer, in ms: 24 hours from the first request. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

/**
 * One row per `Idempotency-Key` a caller sent with a POST, for 24 h: while its request runs (`RUNNING`, held
 * until `lockedUntil`), then the answer to replay (`DONE`). PostgreSQL, not Redis, holds it, so losing Redis
 * can never make a repeat act twice. `scope` keeps callers apart: `key:<apiKeyId>` for the public API,
 * `operator` for the operator API.
 *
 * Partitioned by day of `startedAt` (migration 0025): the worker drops a day once all of its keys have expired,
 * never a `DELETE`. A key's rows may lie in two partitions (yesterday's, expired or not, and today's), so the
 * key is unique among its live rows by a lock on the key, not by an index (`claimIdempotencyKey`).
 */
export const idempotencyKeys = pgTable(
  'idempotency_keys',
  {
    scope: text('scope').notNull(),
    key: text('key').notNull(),
    /** sha256 (hex) of the method, path with query, content type and raw body: "the same request". */
    requestHash: text('request_hash').notNull(),
    method: text('method').notNull(),
    path: text('path').notNull(),
    state: text('state').$type<IdempotencyState>().notNull(),
    /** Who holds a `RUNNING` row: a random token per claim, so a late answer never lands on a newer claim. */
    claimToken: text('claim_token').notNull(),
    /** The answer, once `DONE`. */
    responseStatus: integer('response_status'),
    responseContentType: text('response_content_type'),
    /** The answer's headers worth replaying (the ids of the loyalty actions it made), by name. */
    responseHeaders: jsonb('response_headers').$type<Record<string, string>>(),
    responseBody: text('response_body'),
    /**
     * The participants the answer shows (their ids), so erasing one finds the answers to scrub; null when it
     * shows none.
     */
    subjects: text('subjects').array(),
    startedAt: timestamp('started_at', { withTimezone: true, mode: 'date' }).notNull(),
    /** A `RUNNING` row past this belongs to a process that died: the next repeat takes it over. */
    lockedUntil: timestamp('locked_until', { withTimezone: true, mode: 'date' }).notNull(),
    /** 24 h after the first request: from then on the key is free again, and its day's partition dropped. */
    expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date' }).notNull(),
  },
  (t) => [
    primaryKey({ name: 'idempotency_keys_pk', columns: [t.scope, t.key, t.startedAt] }),
    index('idempotency_keys_subjects_idx').using('gin', t.subjects).where(sql`${t.subjects} is not null`),
  ],
);
