import { z } from '@hono/zod-openapi';
import { EVENT_DESCRIPTIONS, TEST_EVENT_TYPE } from '@stampcard/core';
import type { App } from '../env';
import { pascal, TestWebhookBody, WEBHOOK_BODIES } from '../lib/views';

/** The headers of every delivery (Standard Webhooks), as the dispatcher sends them. */
const headers = (withEventId: boolean) =>
  z.object({
    'webhook-id': z.string().regex(/^msg_/).openapi({
      description:
        'The message id (`msg_…`): the same on every retry and replay of this message, so a receiver can drop a repeat. Part of what is signed',
      example: 'msg_2xVb7kQ9aTfLmN3pRcYd',
    }),
    'webhook-timestamp': z.string().regex(/^\d+$/).openapi({
      description:
        'When this attempt was signed, in seconds since the epoch (UTC). Part of what is signed; refuse one far from your clock (replays)',
      example: '1795384407',
    }),
    'webhook-signature': z
      .string()
      .regex(/^v1,[A-Za-z0-9+/]+={0,2}( v1,[A-Za-z0-9+/]+={0,2})*$/)
      .openapi({
        description:
          "`v1,<base64 HMAC-SHA256 of webhook-id.webhook-timestamp.body>` with the endpoint's secret (`whsec_…`, base64 after the prefix); two, space-separated, while a rotated secret still signs (24 h). Verify with any Standard Webhooks library",
      }),
    ...(withEventId
      ? {
          'stampcard-event-id': z.string().regex(/^evt_/).openapi({
            description: 'The event (`evt_…`): its `id` in the event feed (`GET /v1/campaign/{id}/events`)',
          }),
          'webhook-sequence': z
            .string()
            .regex(/^[1-9]\d*$/)
            .optional()
            .openapi({
              description:
                "For an event that shows a participant: this message's place among that participant's messages to this endpoint, 1, 2, 3… in the order their events were recorded, the same on every retry and replay. Keep the highest you applied per participant and drop a message below it: it is older than what you have. Not part of what is signed; the message's `sequence` in the API (`GET /v1/webhook-messages/{id}`) is the reference",
              example: '3',
            }),
          'webhook-previous-id': z.string().regex(/^msg_/).optional().openapi({
            description:
              'On an endpoint with `ordering: PARTICIPANT`: the message of the same participant just before this one, sent only when that one was dead-lettered (its retries spent). Its `webhook-sequence` is the one missing; replaying it sends it with that number',
            example: 'msg_2xVb7kQ9aTfLmN3pRcYc',
          }),
        }
      : {}),
  });

const RESPONSES = {
  '2XX': {
    description:
      "Delivered: the message SUCCEEDED (the answer's first 4 KiB are kept in its attempt log). Answer within the timeout (15 s by default).",
  },
  '410': {
    description:
      'Gone: the endpoint is disabled, its pending messages held, and `WEBHOOK_ENDPOINT_DISABLED` sent.',
  },
  '429': {
    description:
      "Throttled, with `Retry-After` (seconds or an HTTP date; 503 with it too): the endpoint's deliveries pause that long, at least a second, without spending a retry.",
  },
  default: {
    description:
      'Anything else, or no answer within the timeout: retried on the schedule (immediately, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h, with jitter), then FAILED and replayable. An endpoint failing for 5 days is disabled. Redirects are not followed.',
  },
};

/**
 * The document's `webhooks`: one entry per event type, and the test message, each the POST a receiver gets:
 * its headers and its body.
 */
export function registerWebhooks(app: App) {
  const entries = [
    ...WEBHOOK_BODIES.map(({ type, schema }) => ({ type, schema: schema as z.ZodType, event: true })),
    { type: TEST_EVENT_TYPE, schema: TestWebhookBody as z.ZodType, event: false },
  ];
  for (const { type, schema, event } of entries) {
    app.openAPIRegistry.registerWebhook({
      method: 'post',
      path: type,
      operationId: `webhook${pascal(type)}`,
      summary: type,
      description: `${EVENT_DESCRIPTIONS[type as keyof typeof EVENT_DESCRIPTIONS]}\n\nSent to each enabled endpoint of the campaign whose \`eventTypes\` include it (or that lists none), signed with the Standard Webhooks headers.`,
      tags: ['Webhooks'],
      security: [],
      request: {
        headers: headers(event),
        body: { required: true, content: { 'application/json': { schema } } },
      },
      responses: RESPONSES,
    });
  }
}
