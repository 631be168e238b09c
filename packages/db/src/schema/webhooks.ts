import { sql } from 'drizzle-orm';
import { boolean, index, integer, jsonb, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { campaigns } from './campaigns';

export const ENDPOINT_KINDS = ['NOTIFY', 'FULFILMENT'] as const;
export type EndpointKind = (typeof ENDPOINT_KINDS)[number];

/** Why an endpoint stopped receiving: an operator, a 410 Gone answer, or 5 days of failures. */
export const DISABLED_REASONS = ['OPERATOR', 'GONE', 'FAILING'] as const;
export type DisabledReason = (typeof DISABLED_REASONS)[number];

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

/**
 * A campaign's webhook endpoint. `secret` signs every delivery; during a rotation `previousSecret` signs too,
 * until `previousSecretExpiresAt`. An empty `eventTypes` means every type.
 */
export const webhookEndpoints = pgTable(
  'webhook_endpoints',
  {
    id: text('id').primaryKey(),
    campaignId: text('campaign_id')
      .notNull()
      .references(() => campaigns.id, { onDelete: 'cascade' }),
    url: text('url').notNull(),
    description: text('description').notNull().default(''),
    eventTypes: text('event_types').array().notNull().default(sql`'{}'::text[]`),
    kind: text('kind').$type<EndpointKind>().notNull(),
    enabled: boolean('enabled').notNull().default(true),
    disabledReason: text('disabled_reason').$type<DisabledReason>(),
    disabledAt: ts('disabled_at'),
    /** Deliveries per second, across every dispatcher process; null: no limit. */
    rateLimit: integer('rate_limit'),
    secret: text('secret').notNull(),
    previousSecret: text('previous_secret'),
    previousSecretExpiresAt: ts('previous_secret_expires_at'),
    /** Set by the first failed attempt after a success, cleared by the next success. */
    failingSince: ts('failing_since'),
    /**
     * Its throttled answers (429/503 with Retry-After) since its last success, and when the first of them came:
     * how long a throttle holds it grows with that run, and past a bound each throttle counts as a failure.
     */
    throttles: integer('throttles').notNull().default(0),
    throttledSince: ts('throttled_since'),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [index('webhook_endpoints_campaign_idx').on(t.campaignId)],
);

/**
 * PENDING: waiting for its next attempt (or held while its endpoint is disabled); SUCCEEDED: a 2xx came back;
 * FAILED: every attempt of the schedule failed (the dead letter, replayable); DISCARDED: an operator dropped it.
 */
export const MESSAGE_STATUSES = ['PENDING', 'SUCCEEDED', 'FAILED', 'DISCARDED'] as const;
export type MessageStatus = (typeof MESSAGE_STATUSES)[number];

/**
 * One event for one endpoint. Its id is derived from (event, endpoint), so fanning an event out again finds
 * the same row. `attempts` counts the attempts of the current schedule (a replay starts a new one); attempts
 * that an endpoint throttled (429/503 with Retry-After) do not count, until its run of throttles passes a bound.
 */
export const webhookMessages = pgTable(
  'webhook_messages',
  {
    id: text('id').primaryKey(),
    endpointId: text('endpoint_id')
      .notNull()
      .references(() => webhookEndpoints.id, { onDelete: 'cascade' }),
    campaignId: text('campaign_id').notNull(),
    /** The outbox event; null for a test message, whose body is `testBody`. */
    eventId: text('event_id'),
    eventType: text('event_type').notNull(),
    testBody: jsonb('test_body').$type<Record<string, unknown>>(),
    status: text('status').$type<MessageStatus>().notNull(),
    attempts: integer('attempts').notNull().default(0),
    /**
     * Raised whenever the message is scheduled from outside its retry schedule (a replay, its endpoint enabled
     * again): its delivery job is `<id>-<generation>`, so a job of an earlier generation finds itself stale.
     */
    generation: integer('generation').notNull().default(0),
    nextAttemptAt: ts('next_attempt_at').notNull(),
    lastStatusCode: integer('last_status_code'),
    lastError: text('last_error'),
    /**
     * Attempts deleted from its log: only the first and the last `ATTEMPT_LOG_KEEP` are kept, so that the
     * log of a message cannot grow without end. The attempts ever made are these plus the rows kept.
     */
    attemptsPruned: integer('attempts_pruned').notNull().default(0),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
    succeededAt: ts('succeeded_at'),
  },
  (t) => [
    uniqueIndex('webhook_messages_event_endpoint_uq').on(t.eventId, t.endpointId),
    index('webhook_messages_endpoint_idx').on(t.endpointId, t.createdAt),
    index('webhook_messages_due_idx').on(t.nextAttemptAt).where(sql`${t.status} = 'PENDING'`),
  ],
);

/**
 * The attempts to deliver a message: when, what came back (at most 4 KiB of it), how long it took. Only the
 * first and the last `ATTEMPT_LOG_KEEP` of a message are kept (see `attemptsPruned`).
 */
export const webhookAttempts = pgTable(
  'webhook_attempts',
  {
    id: text('id').primaryKey(),
    messageId: text('message_id')
      .notNull()
      .references(() => webhookMessages.id, { onDelete: 'cascade' }),
    endpointId: text('endpoint_id').notNull(),
    attemptedAt: ts('attempted_at').notNull(),
    /** null when no answer came (timeout, refused connection, refused address). */
    statusCode: integer('status_code'),
    latencyMs: integer('latency_ms').notNull(),
    responseExcerpt: text('response_excerpt'),
    /** The class of the failure (`TIMEOUT`, `CONNECTION`, `REFUSED_ADDRESS`, `HTTP_STATUS`…); null on success. */
    errorClass: text('error_class'),
    succeeded: boolean('succeeded').notNull(),
    /**
     * A 429/503 with Retry-After: the endpoint asked to slow down. It did not count against the schedule
     * unless the endpoint's run of throttles had passed its bound (the message's `attempts` says).
     */
    throttled: boolean('throttled').notNull().default(false),
  },
  // With the id, the order the log is kept and read in (first and last attempts) is the index's own.
  (t) => [index('webhook_attempts_message_idx').on(t.messageId, t.attemptedAt, t.id)],
);
