import { z } from '@hono/zod-openapi';
import {
  ActionView,
  AuditEntryView,
  CampaignRef as CampaignRefView,
  EMBEDDED_REWARDS,
  type EmittedEventType,
  EVENT_SCHEMAS,
  FormSubmissionView,
  ParticipantImportView,
  ParticipantRewardView,
  ParticipantRewardWithRewardView,
  ParticipantView,
  RewardView,
  TEST_EVENT_DATA,
  TEST_EVENT_TYPE,
} from '@stampcard/core';
import { CAMPAIGN_STATUSES } from '@stampcard/db';

/**
 * The public objects as the OpenAPI document names them: core's view schemas (`packages/core/src/views.ts`,
 * the types its serializers return) under component names, nested ones by reference. Only the documentation
 * differs: every field, type and strictness is core's.
 */
const ms = (description: string) =>
  z
    .number()
    .int()
    .openapi({ description: `${description} (UTC ms)` });

/**
 * `schema.openapi(refId, metadata)` for a schema core made. Zod copies its prototype's methods onto each schema
 * as it makes it, so one made before `@hono/zod-openapi` added `.openapi()` to zod has none (core loads first
 * when the stack is built by `scripts/stack.ts`). The prototype's method works on any schema.
 */
function named<T extends z.ZodType>(schema: T, refId: string, metadata: { description: string }): T {
  return z.ZodType.prototype.openapi.call(schema, refId, metadata) as T;
}

export const Reward = named(RewardView, 'Reward', {
  description: 'A reward of a campaign, whole, as the operator API and webhooks show it',
});

export const ParticipantReward = named(ParticipantRewardView, 'ParticipantReward', {
  description: 'A reward a participant earned: `isAvailable` is approved and not yet fulfilled',
});

export const ParticipantRewardWithReward = named(
  ParticipantRewardWithRewardView,
  'ParticipantRewardWithReward',
  { description: 'A ParticipantReward with the details of its Reward, as webhooks and events carry it' },
);

export const Participant = ParticipantView.extend({
  rewards: z
    .array(ParticipantReward)
    .max(EMBEDDED_REWARDS)
    .optional()
    .openapi({
      description: `The newest rewards earned, newest first: at most ${EMBEDDED_REWARDS}. All of them are paged at \`rewardsUrl\`. Absent in events`,
    }),
  rewardCount: z.number().int().optional().openapi({
    description: 'How many rewards the participant holds, approved or not (shown with `rewards`)',
  }),
  moreRewards: z.boolean().optional().openapi({
    description: '`true` when `rewardCount` is more than `rewards` shows: page the rest at `rewardsUrl`',
  }),
  rewardsUrl: z.string().optional().openapi({
    description:
      "The path of `GET /v1/campaign/{id}/participant/{participantId}/rewards` on this API's origin: every reward, oldest first, cursor-paged",
    example: '/v1/campaign/a1b2c3d4/participant/k3q9az7xy2bc/rewards',
  }),
}).openapi('Participant', {
  description: `A person in a campaign, with their counts (monthly ones for the current UTC month) and their newest ${EMBEDDED_REWARDS} rewards`,
});

export const LoyaltyAction = ActionView.extend({
  createdAt: ms('When it was accepted'),
  appliedAt: ms('When a worker applied it').nullable(),
  unlockedRewards: z.array(ParticipantReward).optional(),
  reason: z.string().optional().openapi({ description: 'Why it was REJECTED' }),
}).openapi('LoyaltyAction', {
  description: 'A loyalty action: QUEUED when accepted, then APPLIED or REJECTED',
});

export const CampaignRef = named(CampaignRefView, 'CampaignRef', {
  description: 'The campaign as events name it',
});

/** Campaign reads show rewards as the seed's examples do (`serializeCampaignReward`). */
export const CampaignReward = RewardView.omit({
  title: true,
  order: true,
  limitDuration: true,
  numberOfWinners: true,
  couponCode: true,
  metadata: true,
}).openapi('CampaignReward', {
  description: 'A reward as campaign reads show it: without title, order, limits, coupon code and metadata',
});

const campaignFields = {
  id: z.string(),
  name: z.string(),
  loyaltyActionCount: z.number().int(),
  participantCount: z.number().int(),
  winnerCount: z.number().int().openapi({ description: 'Participants with an approved reward' }),
  status: z.enum(CAMPAIGN_STATUSES),
  currencyISO: z.string(),
};

/** `serializeCampaign`. */
export const Campaign = z
  .strictObject({ ...campaignFields, rewards: z.array(CampaignReward) })
  .openapi('Campaign', { description: 'A loyalty program (campaign)' });

/** `serializeCampaignForOperator`, its settings described by the schemas its routes accept. */
export function operatorCampaign(settings: { antiFraud: z.ZodType; pointsConversion: z.ZodType }) {
  return z
    .strictObject({
      ...campaignFields,
      accountId: z.string(),
      requireRewardApproval: z.boolean(),
      antiFraud: settings.antiFraud,
      pointsConversion: settings.pointsConversion,
      createdAt: ms('When it was made'),
      rewards: z.array(Reward),
    })
    .openapi('OperatorCampaign', { description: 'A campaign with its settings and whole rewards' });
}

/** Core's event schemas name the objects above by reference. */
const NAMED = new Map<z.ZodType, z.ZodType>([
  [ParticipantView, Participant],
  [ActionView, LoyaltyAction],
  [CampaignRefView, CampaignRef],
  [ParticipantRewardWithRewardView, ParticipantRewardWithReward],
]);

function withRefs(schema: z.ZodType): z.ZodType {
  const hit = NAMED.get(schema);
  if (hit) return hit;
  if (schema instanceof z.ZodOptional) {
    const inner = withRefs(schema.unwrap() as z.ZodType);
    return inner === schema.unwrap() ? schema : inner.optional();
  }
  if (schema instanceof z.ZodArray) {
    const inner = withRefs(schema.element as z.ZodType);
    return inner === schema.element ? schema : z.array(inner);
  }
  return schema;
}

/** An event type as a name: `NEW_PARTICIPANT_ADDED` → `NewParticipantAdded`. */
export const pascal = (type: string) =>
  type
    .toLowerCase()
    .split('_')
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join('');

/** The `data` of each event type, named `<Type>Data`, core's schema with the objects above by reference. */
const eventData = (type: EmittedEventType) => {
  const data = EVENT_SCHEMAS[type] as z.ZodObject;
  const shape = Object.fromEntries(Object.entries(data.shape).map(([k, v]) => [k, withRefs(v as z.ZodType)]));
  return named(data.extend(shape), `${pascal(type)}Data`, {
    description: `The \`data\` of a \`${type}\` event`,
  });
};

/** What a webhook's body is, for any type: `{ type, timestamp, data }` (Standard Webhooks' payload). */
const webhookBody = (type: string, data: z.ZodType) =>
  z.strictObject({
    // The outbox column is text: the literal is the document's, the type the compiler checks is a string.
    type: z.literal(type as string),
    timestamp: ms('When it happened'),
    data,
  });

const EVENT_TYPES_WITH_SCHEMA = Object.keys(EVENT_SCHEMAS) as EmittedEventType[];
const DATA = new Map(EVENT_TYPES_WITH_SCHEMA.map((type) => [type, eventData(type)]));

/**
 * The body a webhook of each event type carries, exactly the bytes the dispatcher signs and sends:
 * `{ type, timestamp, data }`. The event's id is not in it: the delivery's headers carry it
 * (`stampcard-event-id`, and `webhook-id` for the message).
 */
export const WEBHOOK_BODIES = EVENT_TYPES_WITH_SCHEMA.map((type) => ({
  type,
  schema: webhookBody(type, DATA.get(type)!).openapi(`${pascal(type)}Event`, {
    description: `The body of a \`${type}\` webhook`,
  }),
}));

/** The body of a test message (`WEBHOOK_TEST`): sent by the operator API's test, never an event. */
export const TestWebhookBody = webhookBody(TEST_EVENT_TYPE, TEST_EVENT_DATA).openapi('WebhookTestEvent', {
  description: `The body of a \`${TEST_EVENT_TYPE}\` message, which "send a test" delivers to one endpoint`,
});

/** An event of the pull feed: the webhook's body and the event's id (`after` pages from it). */
const feedVariant = (type: EmittedEventType) =>
  z
    .strictObject({
      id: z.string().openapi({
        description: 'The event id (`after` pages from it; `stampcard-event-id` of its webhooks)',
      }),
      ...webhookBody(type, DATA.get(type)!).shape,
    })
    .openapi(`${pascal(type)}FeedEvent`, {
      description: `A \`${type}\` event in the feed: its webhook's body, and its id`,
    });

const [firstEvent, ...otherEvents] = EVENT_TYPES_WITH_SCHEMA.map(feedVariant) as [
  ReturnType<typeof feedVariant>,
  ...ReturnType<typeof feedVariant>[],
];

/** An event of the pull feed: `{ id, type, timestamp, data }`, `data` as the schema of its type says. */
export const FeedEvent = z.discriminatedUnion('type', [firstEvent, ...otherEvents]);

export const FormSubmission = named(FormSubmissionView, 'FormSubmission', {
  description:
    "A reward's form as a participant sent it (a ParticipantRewardFormSubmission): `UNREVIEWED` until approved (a loyalty action counted for the reward) or rejected",
});

export const ParticipantImport = named(ParticipantImportView, 'ParticipantImport', {
  description:
    'A bulk import of participants: its progress (`rowsDone` of `rowsTotal`, known once the file was read through), what it did (`created`, `updated`, `unchanged`, `refused` rows; `loyaltyActionsQueued` for carried-over counts), the first 100 refused rows with their reason, and where to download every refused row as CSV (`refusedRowsUrl`). Times in UTC ms.',
});

export const AuditEntry = named(AuditEntryView, 'AuditEntry', {
  description:
    'A change: when (`at`, UTC ms), who (`actor`), what (`entity`, `entityId`, `action`) and the fields it changed, as stored (`before`, `after`: column names as in the database; all of them for a creation or a deletion; secrets never)',
});
