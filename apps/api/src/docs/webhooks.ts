import { z } from '@hono/zod-openapi';
import { type EmittedEventType, TEST_EVENT_TYPE } from '@stampcard/core';
import type { App } from '../env';
import { pascal, TestWebhookBody, WEBHOOK_BODIES } from '../lib/views';

/** What each webhook means to its receiver; a type added to the catalogue must be described here (the type says so). */
const WHEN: Record<EmittedEventType | typeof TEST_EVENT_TYPE, string> = {
  NEW_PARTICIPANT_ADDED:
    'A participant joined the campaign: added through the API, or by a loyalty action that named a new email.',
  PARTICIPANT_UPDATED:
    'The API changed a participant: `changed` names the fields whose value changed, `participant` is as stored after.',
  PARTICIPANT_FRAUD_STATUS_UPDATED:
    "A participant's fraud risk level or reason code changed (e.g. set by hand: `MANUAL_UPDATE`); `previous` is what it had before.",
  LOYALTY_ACTION_APPLIED:
    'A worker applied a loyalty action: its counts are in; `unlockedRewards` lists the rewards it unlocked, if any.',
  PARTICIPANT_REACHED_A_GOAL:
    'A reward unlocked and is approved (at once, or later by manual review): `reward` is the whole ParticipantReward with its Reward. A `FULFILMENT` endpoint that answers 2xx marks it FULFILLED.',
  PARTICIPANT_REWARD_FULFILLED:
    'A reward became FULFILLED (a `FULFILMENT` endpoint answered 2xx to its goal, or the API fulfilled it).',
  PARTICIPANT_SUBMITTED_REWARD_FORM: "A participant sent a reward's form: it waits for review (UNREVIEWED).",
  REWARD_FORM_REVIEWED:
    'A form submission was reviewed: `approved` true counted a loyalty action for its reward (`loyaltyActionId`), false unlocked nothing.',
  PARTICIPANT_DELETED:
    'A participant was deleted: ids and counts only, no personal data (their past events are erased from the feed and from messages not yet delivered).',
  PARTICIPANT_REWARD_DELETED: 'An earned reward not yet approved was removed: ids only.',
  CAMPAIGN_ENDED: 'The campaign became COMPLETE.',
  WEBHOOK_ENDPOINT_DISABLED:
    "An endpoint of the campaign stopped receiving (it answered 410, or failed for 5 days): named by its id and its URL's host only.",
  [TEST_EVENT_TYPE]:
    'The operator API\'s "send a test" (`POST /admin/v1/webhook-endpoints/{id}/test`): to that endpoint only, whatever event types it asked for.',
};

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
      description: `${WHEN[type as keyof typeof WHEN]}\n\nSent to each enabled endpoint of the campaign whose \`eventTypes\` include it (or that lists none), signed with the Standard Webhooks headers.`,
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
