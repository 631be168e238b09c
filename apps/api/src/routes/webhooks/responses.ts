import { z } from '@hono/zod-openapi';
import { ATTEMPT_LOG_KEEP } from '@stampcard/core';
import {
  BACKLOG_STATES,
  DISABLED_REASONS,
  ENDPOINT_KINDS,
  ENDPOINT_ORDERINGS,
  MESSAGE_STATUSES,
} from '@stampcard/db';

/** What the webhook routes answer: the shapes of `packages/core/src/services/webhooks/views.ts`. */

const ms = (description: string) =>
  z
    .number()
    .int()
    .openapi({ description: `${description} (UTC ms)` });

/** `serializeBacklog`: the latest release or discard of an endpoint's messages, with its progress. */
export const WebhookBacklog = z
  .strictObject({
    kind: z.enum(['RELEASE', 'DISCARD']).openapi({
      description:
        'RELEASE: the messages it held while disabled, made due when it was enabled; DISCARD: its pending messages, dropped',
    }),
    state: z.enum(BACKLOG_STATES).openapi({
      description:
        'RUNNING (in batches, in the background), DONE, or CANCELLED (a release of an endpoint disabled again)',
    }),
    total: z.number().int().openapi({ description: 'Messages it has to handle, counted when it started' }),
    done: z.number().int().openapi({ description: 'Messages handled so far' }),
    startedAt: ms('When it started'),
    finishedAt: ms('When it ended').nullable(),
  })
  .openapi('WebhookBacklog', {
    description:
      "An operation on all of an endpoint's messages, run in bounded batches in the background; only messages made before it started are its own",
  });

/** `serializeEndpoint`: never its secrets. */
const endpointFields = {
  id: z.string(),
  campaignId: z.string(),
  url: z.string(),
  description: z.string(),
  eventTypes: z.array(z.string()).openapi({ description: 'The event types it receives; empty: all' }),
  kind: z.enum(ENDPOINT_KINDS),
  enabled: z.boolean(),
  disabledReason: z
    .enum(DISABLED_REASONS)
    .nullable()
    .openapi({ description: 'OPERATOR, GONE (it answered 410) or FAILING (5 days of failures)' }),
  disabledAt: ms('When it was disabled').nullable(),
  rateLimit: z.number().int().nullable().openapi({ description: 'Deliveries per second; null: no limit' }),
  traceContext: z
    .boolean()
    .openapi({ description: 'Deliveries carry a W3C `traceparent` header (when the service traces)' }),
  ordering: z.enum(ENDPOINT_ORDERINGS).openapi({
    description: "`PARTICIPANT`: a participant's messages one at a time, in order; `NONE`: as they come",
  }),
  failingSince: ms('When its current run of failures began').nullable(),
  throttledSince: ms(
    'When its current run of throttled answers (429/503 with Retry-After) began; a success ends it',
  ).nullable(),
  previousSecretExpiresAt: ms('While a rotation overlaps, when the previous secret stops signing').nullable(),
  createdAt: ms('When it was made'),
  updatedAt: ms('When it last changed'),
  backlog: WebhookBacklog.nullable().openapi({
    description: 'Its latest release or discard of messages and its progress; null if it never had one',
  }),
};

// Each answer is a strict object of its own: `allOf` of a strict schema and more fields would match nothing.
export const WebhookEndpoint = z
  .strictObject(endpointFields)
  .openapi('WebhookEndpoint', { description: 'A webhook endpoint of a campaign' });

/** `createEndpoint` and `rotateSecret`: the endpoint with the secret, shown this once. */
export const WebhookEndpointWithSecret = z
  .strictObject({
    ...endpointFields,
    secret: z.string().nullable().openapi({
      description:
        'The signing secret (`whsec_…`), shown in this answer only: null in a replay of it (`Idempotent-Withheld: secret`), which never stores it',
    }),
  })
  .openapi('WebhookEndpointWithSecret', { description: 'A webhook endpoint with its new signing secret' });

/** `PATCH`: the endpoint, and how many messages it kept are due now. */
export const UpdatedWebhookEndpoint = z.strictObject({
  ...endpointFields,
  released: z.number().int().openapi({
    description:
      'Messages kept while it was disabled that this change releases (when it enabled it): the first batch is due at once, the rest follow in the background (see `backlog`)',
  }),
});

export const WebhookEndpointList = z.strictObject({ endpoints: z.array(WebhookEndpoint) });

/** `serializeAttempt`. */
export const WebhookAttempt = z
  .strictObject({
    id: z.string(),
    attemptedAt: ms('When it was made'),
    statusCode: z.number().int().nullable().openapi({ description: 'null when no answer came' }),
    latencyMs: z.number().int(),
    responseExcerpt: z.string().nullable().openapi({ description: 'At most 4 KiB of the answer' }),
    errorClass: z
      .string()
      .nullable()
      .openapi({ description: 'TIMEOUT, CONNECTION, REFUSED_ADDRESS, HTTP_STATUS…; null on success' }),
    succeeded: z.boolean(),
    throttled: z.boolean().openapi({
      description:
        "A 429/503 with Retry-After: it did not count, unless the endpoint's run of throttles had passed WEBHOOK_FREE_THROTTLES",
    }),
  })
  .openapi('WebhookAttempt', { description: 'One attempt to deliver a message' });

/** `serializeMessage`. */
export const WebhookMessage = z
  .strictObject({
    id: z.string(),
    endpointId: z.string(),
    campaignId: z.string(),
    eventId: z.string().nullable().openapi({ description: 'null for a test message' }),
    eventType: z.string().openapi({ description: 'An event type, or WEBHOOK_TEST' }),
    participantId: z.string().nullable().openapi({
      description: 'The participant its event shows; null for an event of none and a test message',
    }),
    sequence: z.number().int().min(1).nullable().openapi({
      description:
        "Its place among its participant's messages to this endpoint (the `webhook-sequence` header): 1, 2, 3… in the order their events were recorded; null without a participant, and for messages made before sequences existed",
    }),
    previousId: z.string().nullable().openapi({
      description:
        'For a message of a PARTICIPANT-ordered endpoint sent after the one before it was dead-lettered: that one (the `webhook-previous-id` header)',
    }),
    status: z.enum(MESSAGE_STATUSES),
    attempts: z.number().int().openapi({ description: 'Attempts of the current schedule' }),
    waiting: z.boolean().openapi({
      description:
        'PENDING behind an earlier message of its participant (a PARTICIPANT-ordered endpoint): sent once that one succeeds or is dead-lettered',
    }),
    nextAttemptAt: ms('When it is next tried, while PENDING and not waiting').nullable(),
    lastStatusCode: z.number().int().nullable(),
    lastError: z.string().nullable(),
    createdAt: ms('When it was made'),
    updatedAt: ms('When it last changed'),
    succeededAt: ms('When a 2xx came back').nullable(),
    attemptLog: z.array(WebhookAttempt).openapi({
      description: `Its first ${ATTEMPT_LOG_KEEP} attempts and its last ${ATTEMPT_LOG_KEEP}, oldest first; those between are not kept`,
    }),
    attemptCount: z.number().int().openapi({ description: 'Every attempt made, in every schedule' }),
    attemptsOmitted: z
      .number()
      .int()
      .openapi({ description: 'Attempts between the first and the last that the log no longer holds' }),
  })
  .openapi('WebhookMessage', {
    description: 'One event for one endpoint, with its first and last attempts and how many there were',
  });

export const WebhookMessagePage = z.strictObject({
  messages: z.array(WebhookMessage),
  more: z.boolean(),
  nextAfter: z.string().nullable().openapi({ description: 'The `after` of the next page' }),
});

export const ReplayAnswer = z.strictObject({
  replayed: z.number().int().openapi({ description: 'Messages due again' }),
  more: z.boolean().openapi({ description: 'More matched than one call replays (10,000): call again' }),
  endpointEnabled: z.boolean().openapi({ description: 'false: they wait until the endpoint is enabled' }),
});

export const DiscardAnswer = z.strictObject({
  discarded: z.number().int().openapi({
    description:
      'Pending messages being discarded (those made until now): the first batch at once, the rest in the background',
  }),
  backlog: WebhookBacklog.nullable().openapi({
    description:
      'The discard and its progress (DONE when one batch was enough); as before when nothing was pending',
  }),
});

export const TestMessageAnswer = z.strictObject({ messageId: z.string(), endpointEnabled: z.boolean() });

export const DeletedEndpoint = z.strictObject({ id: z.string(), deleted: z.boolean() });

/** `eventCatalog`: every type a webhook carries, with what it means and an example body built from its schema. */
export const WebhookEventTypeList = z
  .strictObject({
    eventTypes: z.array(
      z.strictObject({
        type: z.string(),
        description: z.string(),
        example: z
          .record(z.string(), z.unknown())
          .openapi({ description: 'A body as it is sent: `{ type, timestamp, data }`' }),
      }),
    ),
  })
  .openapi('WebhookEventTypeList');
