import { sql } from 'drizzle-orm';
import {
  bigint,
  boolean,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  timestamp,
} from 'drizzle-orm/pg-core';
import { pendingOrdered } from '../index-conditions';
import { accountKeyed } from './campaigns';

export const ENDPOINT_KINDS = ['NOTIFY', 'FULFILMENT'] as const;
export type EndpointKind = (typeof ENDPOINT_KINDS)[number];

/**
 * NONE: an endpoint's messages are sent as they come, several at once. PARTICIPANT: the messages of one
 * participant are sent one after the other in `sequence` order, each once the one before it succeeded or was
 * dead-lettered; other participants' go on meanwhile.
 */
export const ENDPOINT_ORDERINGS = ['NONE', 'PARTICIPANT'] as const;
export type EndpointOrdering = (typeof ENDPOINT_ORDERINGS)[number];

/**
 * The `nextAttemptAt` of a message of a PARTICIPANT-ordered endpoint that waits for an earlier one of its
 * participant: never due by itself; the end of the earlier one makes it due.
 */
export const WAITING_AT = new Date('9999-12-31T00:00:00.000Z');

/** Why an endpoint stopped receiving: an operator, a 410 Gone answer, or 5 days of failures. */
export const DISABLED_REASONS = ['OPERATOR', 'GONE', 'FAILING'] as const;
export type DisabledReason = (typeof DISABLED_REASONS)[number];

/**
 * A long operation on an endpoint's messages, run in bounded batches in the background: RELEASE (it was enabled:
 * its held messages are made due), DISCARD (the operator dropped its pending messages), DELETE (it was deleted:
 * its messages and their attempts go, then the endpoint row).
 */
export const BACKLOG_KINDS = ['RELEASE', 'DISCARD', 'DELETE'] as const;
export type BacklogKind = (typeof BACKLOG_KINDS)[number];
/** RUNNING until its last batch; CANCELLED when the endpoint was disabled during a RELEASE. */
export const BACKLOG_STATES = ['RUNNING', 'DONE', 'CANCELLED'] as const;
export type BacklogState = (typeof BACKLOG_STATES)[number];

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

/**
 * A campaign's webhook endpoint. `secret` signs every delivery; during a rotation `previousSecret` signs too,
 * until `previousSecretExpiresAt`. An empty `eventTypes` means every type.
 */
const endpointsKey = accountKeyed('webhook_endpoints');

export const webhookEndpoints = pgTable(
  'webhook_endpoints',
  {
    id: text('id').primaryKey(),
    accountId: endpointsKey.column(),
    campaignId: text('campaign_id').notNull(),
    url: text('url').notNull(),
    description: text('description').notNull().default(''),
    eventTypes: text('event_types').array().notNull().default(sql`'{}'::text[]`),
    kind: text('kind').$type<EndpointKind>().notNull(),
    enabled: boolean('enabled').notNull().default(true),
    disabledReason: text('disabled_reason').$type<DisabledReason>(),
    disabledAt: ts('disabled_at'),
    /** Deliveries per second, across every dispatcher process; null: no limit. */
    rateLimit: integer('rate_limit'),
    /** Send a W3C `traceparent` header with each delivery (tracing on): the receiver's spans join the trace. */
    traceContext: boolean('trace_context').notNull().default(false),
    /** See `ENDPOINT_ORDERINGS`. A change applies to the messages made after it. */
    ordering: text('ordering').$type<EndpointOrdering>().notNull().default('NONE'),
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
    /** Set when it is deleted: gone from the API at once, while its messages are deleted in batches. */
    deletedAt: ts('deleted_at'),
    /**
     * Its latest backlog operation (see `BACKLOG_KINDS`): the durable state its batches resume from after a crash.
     * `backlogOperation` counts the operations, so a batch job of an earlier one finds itself stale;
     * `backlogBatches` counts the batches run, so a batch job run twice does its batch once.
     */
    backlogKind: text('backlog_kind').$type<BacklogKind>(),
    backlogState: text('backlog_state').$type<BacklogState>(),
    backlogOperation: integer('backlog_operation').notNull().default(0),
    /** Messages it had to handle when it started (RELEASE, DISCARD); null for DELETE. */
    backlogTotal: integer('backlog_total'),
    backlogDone: integer('backlog_done').notNull().default(0),
    backlogBatches: integer('backlog_batches').notNull().default(0),
    /** When it started: only messages made before then are its to handle. */
    backlogStartedAt: ts('backlog_started_at'),
    backlogFinishedAt: ts('backlog_finished_at'),
    /** When its last batch ran (or it started): a RUNNING operation untouched for long is resumed by the sweep. */
    backlogTouchedAt: ts('backlog_touched_at'),
    /** The last message handled, in (createdAt, id) order: the next batch starts after it. */
    backlogCursorAt: ts('backlog_cursor_at'),
    backlogCursorId: text('backlog_cursor_id'),
  },
  (t) => [
    endpointsKey.foreignKey(t),
    index('webhook_endpoints_campaign_idx').on(t.campaignId),
    // The operator console's endpoints failing now, oldest failure first.
    index('webhook_endpoints_failing_idx')
      .on(t.failingSince)
      .where(sql`${t.failingSince} is not null and ${t.deletedAt} is null`),
    index('webhook_endpoints_backlog_idx').on(t.backlogTouchedAt).where(sql`${t.backlogState} = 'RUNNING'`),
  ],
);

/**
 * PENDING: waiting for its next attempt (or held while its endpoint is disabled); SUCCEEDED: a 2xx came back;
 * FAILED: every attempt of the schedule failed (the dead letter, replayable); DISCARDED: an operator dropped it.
 */
export const MESSAGE_STATUSES = ['PENDING', 'SUCCEEDED', 'FAILED', 'DISCARDED'] as const;
export type MessageStatus = (typeof MESSAGE_STATUSES)[number];

/**
 * One event for one endpoint, partitioned with its event (by week of `eventAt`). Its id is derived from (event, endpoint), so fanning an event out again finds
 * the same row. `attempts` counts the attempts of the current schedule (a replay starts a new one); attempts
 * that an endpoint throttled (429/503 with Retry-After) do not count, until its run of throttles passes a bound.
 */
export const webhookMessages = pgTable(
  'webhook_messages',
  {
    id: text('id').notNull(),
    endpointId: text('endpoint_id')
      .notNull()
      .references(() => webhookEndpoints.id, { onDelete: 'cascade' }),
    campaignId: text('campaign_id').notNull(),
    /** The outbox event; null for a test message, whose body is `testBody`. */
    eventId: text('event_id'),
    /** The participant its event shows; null for an event of no participant and a test message. */
    participantId: text('participant_id'),
    /**
     * Its place among the messages of its participant to its endpoint: 1, 2, 3… in the order their events were
     * recorded, given by the fan-out from `webhook_sequences` (the `webhook-sequence` header); null with no
     * participant. A replay sends it again with the same number.
     */
    sequence: bigint('sequence', { mode: 'number' }),
    /**
     * Made for a PARTICIPANT-ordered endpoint (with a participant): sent only once no earlier ordered message of
     * its participant to the endpoint is PENDING. Until then its `nextAttemptAt` is `WAITING_AT`.
     */
    ordered: boolean('ordered').notNull().default(false),
    /** For an ordered message made due by the dead-lettering of the one before it: that one's id (the gap). */
    previousId: text('previous_id'),
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
    /**
     * Set by the dispatcher that is about to send it (`claimDeliveries`), to a moment past the longest an attempt
     * can take: until then no other dispatcher (nor a job run twice) sends it. Cleared by the attempt's record.
     * Null when no attempt is in flight.
     */
    claimedUntil: ts('claimed_until'),
    /**
     * When its event was recorded (a test message: when it was made): the partition key. Messages go with their
     * events, a week at a time, past `EVENT_RETENTION_DAYS`. Rows older than the partitioning (migration 0023)
     * hold `-infinity`.
     */
    eventAt: ts('event_at').notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ name: 'webhook_messages_pk', columns: [t.id, t.eventAt] }),
    // An event's messages. Its id, derived from (event, endpoint), already makes a message unique.
    index('webhook_messages_event_idx').on(t.eventId),
    index('webhook_messages_endpoint_idx').on(t.endpointId, t.createdAt),
    index('webhook_messages_due_idx').on(t.nextAttemptAt).where(sql`${t.status} = 'PENDING'`),
    // An endpoint's pending messages in (createdAt, id) order: what a backlog batch takes from its cursor, and
    // what counting them reads, however many delivered ones the endpoint has.
    index('webhook_messages_pending_idx')
      .on(t.endpointId, t.createdAt, t.id)
      .where(sql`${t.status} = 'PENDING'`),
    // The ordered messages still to send of each (endpoint, participant), in sequence: whether a new one waits,
    // and which one goes next. Its condition is `pendingOrdered`'s, which no other index matches.
    index('webhook_messages_ordered_idx')
      .on(t.endpointId, t.participantId, t.sequence)
      .where(pendingOrdered(t.status, t.ordered)),
  ],
);

/**
 * The attempts to deliver a message: when, what came back (at most 4 KiB of it), how long it took. Only the
 * first and the last `ATTEMPT_LOG_KEEP` of a message are kept (see `attemptsPruned`). Partitioned by week of
 * `attemptedAt` (migration 0023): a week past `ATTEMPT_RETENTION_DAYS` is dropped whole by the worker.
 */
export const webhookAttempts = pgTable(
  'webhook_attempts',
  {
    id: text('id').notNull(),
    /** Its message. No foreign key: the two are partitioned apart, and attempts go first (30 days). */
    messageId: text('message_id').notNull(),
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
  // The key is the order a message's log is kept and read in (first and last attempts), so one index serves
  // as both.
  (t) => [
    primaryKey({ name: 'webhook_attempts_pk', columns: [t.messageId, t.attemptedAt, t.id] }),
    // The operator console's deliveries per minute and their latency: a range of the last hour. Attempts
    // arrive in time order and are never updated: a BRIN index.
    index('webhook_attempts_attempted_brin').using('brin', t.attemptedAt),
  ],
);

/**
 * The last `sequence` given to a message of each (endpoint, participant): the fan-out adds its messages' count
 * and numbers them from there, in the order their events were recorded, holding the row until it commits. Kept
 * as long as the endpoint (a participant's numbers only grow, whatever retention drops), ids only.
 */
export const webhookSequences = pgTable(
  'webhook_sequences',
  {
    endpointId: text('endpoint_id')
      .notNull()
      .references(() => webhookEndpoints.id, { onDelete: 'cascade' }),
    participantId: text('participant_id').notNull(),
    last: bigint('last', { mode: 'number' }).notNull(),
  },
  (t) => [primaryKey({ name: 'webhook_sequences_pk', columns: [t.endpointId, t.participantId] })],
);
