import { FRAUD_RISK_LEVELS } from '@stampcard/db';
import { z } from 'zod';
import {
  ActionView,
  CampaignRef,
  FormSubmissionView,
  ParticipantRewardWithRewardView,
  ParticipantView,
} from './views';

/**
 * One zod schema per event type: the `data` of each event in the outbox, and so of each webhook. Emitters
 * build `NewEvent`s, whose `data` type comes from here, so an emitter cannot write a shape its schema does
 * not describe; receivers, the dispatcher and tests parse with the same schemas.
 *
 * Only the types something emits have a schema: a type without one cannot be emitted.
 */
export const EVENT_SCHEMAS = {
  NEW_PARTICIPANT_ADDED: z.strictObject({ participant: ParticipantView, campaign: CampaignRef }),
  /** A participant sent a reward's form: it waits for review (UNREVIEWED). */
  PARTICIPANT_SUBMITTED_REWARD_FORM: z.strictObject({
    formSubmission: FormSubmissionView,
    participant: ParticipantView,
    campaign: CampaignRef,
  }),
  /**
   * A form submission was reviewed: `approved` true counted a loyalty action for its reward (`loyaltyActionId`,
   * applied by the worker, so the unlock rule decides), false unlocked nothing.
   */
  REWARD_FORM_REVIEWED: z.strictObject({
    formSubmission: FormSubmissionView,
    participant: ParticipantView,
    campaign: CampaignRef,
    approved: z.boolean(),
    loyaltyActionId: z.string().nullable(),
  }),
  /** The API changed a participant: `changed` names the fields whose value changed, `participant` is as stored after. */
  PARTICIPANT_UPDATED: z.strictObject({
    participant: ParticipantView,
    campaign: CampaignRef,
    changed: z.array(z.enum(['firstName', 'lastName', 'email', 'notes', 'metadata'])),
  }),
  /**
   * A participant's fraud risk level or reason code changed (e.g. set by hand: `MANUAL_UPDATE`):
   * `participant` as stored after, `previous` what it had before.
   */
  PARTICIPANT_FRAUD_STATUS_UPDATED: z.strictObject({
    participant: ParticipantView,
    previous: z.strictObject({ fraudRiskLevel: z.enum(FRAUD_RISK_LEVELS), fraudReasonCode: z.string() }),
    campaign: CampaignRef,
  }),
  LOYALTY_ACTION_APPLIED: z.strictObject({
    action: ActionView,
    participant: ParticipantView,
    campaign: CampaignRef,
    /** Present when the action unlocked a reward. */
    unlockedRewards: z.array(ParticipantRewardWithRewardView).optional(),
  }),
  /** A reward unlocked and approved (at once, or later by manual review). */
  PARTICIPANT_REACHED_A_GOAL: z.strictObject({
    participant: ParticipantView,
    reward: ParticipantRewardWithRewardView,
    campaign: CampaignRef,
  }),
  /** A FULFILMENT endpoint answered 2xx to the goal: the reward is FULFILLED. */
  PARTICIPANT_REWARD_FULFILLED: z.strictObject({
    participant: ParticipantView,
    reward: ParticipantRewardWithRewardView,
    campaign: CampaignRef,
  }),
  /**
   * A participant was deleted. Ids and counts only: deleting a participant erases its personal data from every
   * stored event and answer (README, Right to erasure), and this event carries none. `rejectedLoyaltyActionCount`:
   * its actions still QUEUED, now REJECTED (`reason: PARTICIPANT_DELETED`); `erasedEventCount`: its past events
   * whose copy of it the deletion's transaction scrubbed (its first batch, at most 2,000, newest first: a longer
   * history is erased after it in the background).
   */
  PARTICIPANT_DELETED: z.strictObject({
    participantId: z.string(),
    campaign: CampaignRef,
    loyaltyActionCount: z.number().int(),
    approvedRewardCount: z.number().int(),
    rejectedLoyaltyActionCount: z.number().int(),
    erasedEventCount: z.number().int(),
  }),
  /** An earned reward not yet approved was removed (the API's DELETE): ids only. */
  PARTICIPANT_REWARD_DELETED: z.strictObject({
    participantRewardId: z.string(),
    rewardId: z.string(),
    participantId: z.string(),
    campaign: CampaignRef,
  }),
  CAMPAIGN_ENDED: z.strictObject({ campaign: CampaignRef }),
  /**
   * An endpoint stopped receiving: it answered 410 Gone, or every attempt failed for 5 days. It is named by its
   * id and its URL's host (with a port, if any), never its whole URL: paths, queries and `user:pass@` often
   * hold the receiver's credentials, and this event goes to the campaign's other subscribers.
   */
  WEBHOOK_ENDPOINT_DISABLED: z.strictObject({
    endpoint: z.strictObject({ id: z.string(), host: z.string() }),
    reason: z.enum(['GONE', 'FAILING']),
    /** When its failures began (UTC ms); null for a 410. */
    failingSince: z.number().int().nullable(),
    campaign: z.strictObject({ id: z.string() }),
  }),
} as const;

/**
 * The `data` of a test message (`WEBHOOK_TEST`, sent by the operator API's "send a test"): it is never an
 * event, so neither the outbox nor the event feed holds one, but receivers get it like any other body.
 */
export const TEST_EVENT_DATA = z.strictObject({
  test: z.literal(true),
  endpointId: z.string(),
  campaign: z.strictObject({ id: z.string() }),
});

export type EmittedEventType = keyof typeof EVENT_SCHEMAS;
export type EventData<T extends EmittedEventType> = z.infer<(typeof EVENT_SCHEMAS)[T]>;

/** An event to write to the outbox: its type decides the shape of its data. */
export type NewEvent = {
  [T in EmittedEventType]: { campaignId: string; type: T; data: EventData<T> };
}[EmittedEventType];

/** Whether `type` (read from the outbox) has a schema; the map is never indexed with another string. */
export function isEmittedEventType(type: string): type is EmittedEventType {
  return Object.hasOwn(EVENT_SCHEMAS, type);
}
