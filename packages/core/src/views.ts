import {
  ACTION_STATUSES,
  AUDIT_ACTIONS,
  AUDIT_ACTOR_KINDS,
  AUDIT_ENTITIES,
  CAMPAIGN_STATUSES,
  FORM_SUBMISSION_STATUSES,
  FRAUD_REASON_CODES,
  FRAUD_RISK_LEVELS,
  IMPORT_COUNT_MODES,
  IMPORT_FORMATS,
  IMPORT_STATUSES,
  PARTICIPANT_REWARD_STATUSES,
  PARTICIPANT_SOURCES,
} from '@stampcard/db';
import { z } from 'zod';

/**
 * The objects the API and webhooks show, as zod schemas: the serializers in `serialize.ts` return exactly
 * these types, event payloads are built from them (`event-schemas.ts`), and a receiver or a test can parse
 * with them. Times are epoch milliseconds.
 */
const time = z.number().int();
const text = z.string().nullable();
const metadata = z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()]));
const countsPerReward = z.record(z.string(), z.number().int());

export const RewardView = z.strictObject({
  id: z.string(),
  title: text,
  description: text,
  subdescription: text,
  instructions: text,
  cta: text,
  submissionType: z.enum(['URL', 'FORM']).nullable(),
  submissionExampleUrl: text,
  submissionFormUrl: text,
  submissionFormFields: z
    .array(
      z.strictObject({
        key: z.string(),
        label: z.string().optional(),
        placeholder: z.string().optional(),
        type: z.string().optional(),
        isRequired: z.boolean().optional(),
        isVisible: z.boolean().optional(),
      }),
    )
    .nullable(),
  submissionFormButtonText: text,
  submissionFormMessages: z
    .strictObject({
      required: z.string().optional(),
      reCaptchaRequired: z.string().optional(),
      success: z.string().optional(),
      error: z.string().optional(),
      alreadySubmitted: z.string().optional(),
    })
    .nullable(),
  isUnlimited: z.boolean(),
  /** -1 when `isUnlimited`. */
  limit: z.number().int(),
  conversionsRequired: z.number().int(),
  limitDuration: z.enum(['IN_TOTAL', 'PER_MONTH']),
  numberOfWinners: z.number().int().nullable(),
  couponCode: text,
  imageUrl: text,
  order: z.number().int().nullable(),
  metadata,
});
export type RewardView = z.infer<typeof RewardView>;

export const ParticipantRewardView = z.strictObject({
  id: z.string(),
  rewardId: z.string(),
  participantId: z.string(),
  status: z.enum(PARTICIPANT_REWARD_STATUSES),
  isAvailable: z.boolean(),
  approved: z.boolean(),
  approvedAt: time.nullable(),
  isFulfilled: z.boolean(),
  fulfilledAt: time.nullable(),
  unread: z.boolean(),
  createdAt: time,
});
export type ParticipantRewardView = z.infer<typeof ParticipantRewardView>;

/** The seed's ParticipantRewardFormSubmission, with when it was sent and reviewed. */
export const FormSubmissionView = z.strictObject({
  id: z.string(),
  participantId: z.string(),
  participantEmail: z.string(),
  rewardId: z.string(),
  status: z.enum(FORM_SUBMISSION_STATUSES),
  formData: z.record(z.string(), z.string()),
  createdAt: time,
  reviewedAt: time.nullable(),
});
export type FormSubmissionView = z.infer<typeof FormSubmissionView>;

/** In webhooks a ParticipantReward also carries the details of its program Reward. */
export const ParticipantRewardWithRewardView = z.strictObject({
  ...RewardView.omit({ id: true }).shape,
  ...ParticipantRewardView.shape,
});
export type ParticipantRewardWithRewardView = z.infer<typeof ParticipantRewardWithRewardView>;

/**
 * How many earned rewards a Participant object embeds: its newest, newest first. The rest are in the paged
 * `GET …/participant/{idOrEmail}/rewards` (`rewardsUrl`); `rewardCount` is the total. 20 is that list's
 * default page: one page's worth (about 5.5 KB) per participant, so a page of 100 participants carries at most
 * 2,000 rewards whatever their histories, and the many participants with fewer still show all of theirs.
 */
export const EMBEDDED_REWARDS = 20;

export const ParticipantView = z.strictObject({
  id: z.string(),
  firstName: text,
  lastName: text,
  email: z.string(),
  loyaltyActionCount: z.number().int(),
  prevLoyaltyActionCount: z.number().int(),
  monthlyLoyaltyActionCount: z.number().int(),
  prevMonthlyLoyaltyActionCount: z.number().int(),
  createdAt: time,
  fraudRiskLevel: z.enum(FRAUD_RISK_LEVELS),
  fraudReasonCode: z.enum(FRAUD_REASON_CODES),
  isWinner: z.boolean(),
  loyaltyActionSource: z.enum(PARTICIPANT_SOURCES),
  notes: text,
  metadata,
  /** Both spellings the seed uses; absent when empty. */
  loyaltyActionCountsPerReward: countsPerReward.optional(),
  loyaltyActionCountPerReward: countsPerReward.optional(),
  monthlyLoyaltyActionCountsPerReward: countsPerReward.optional(),
  monthlyLoyaltyActionCountPerReward: countsPerReward.optional(),
  /** The newest earned rewards, newest first, at most `EMBEDDED_REWARDS`; API reads only. */
  rewards: z.array(ParticipantRewardView).max(EMBEDDED_REWARDS).optional(),
  /** Every reward the participant holds (approved or not); shown with `rewards`. */
  rewardCount: z.number().int().optional(),
  /** `rewardCount` is more than `rewards` shows: page the rest at `rewardsUrl`. */
  moreRewards: z.boolean().optional(),
  /** The path of `GET …/participant/{id}/rewards`, every reward oldest first, cursor-paged. */
  rewardsUrl: z.string().optional(),
  rank: z.number().int().optional(),
  monthlyRank: z.number().int().optional(),
  prevMonthlyRank: z.number().int().optional(),
});
export type ParticipantView = z.infer<typeof ParticipantView>;

export const ActionView = z.strictObject({
  id: z.string(),
  status: z.enum(ACTION_STATUSES),
  participantId: z.string(),
  rewardId: z.string(),
  createdAt: time,
  appliedAt: time.nullable(),
  unlockedRewards: z.array(ParticipantRewardView).optional(),
  reason: z.string().optional(),
});
export type ActionView = z.infer<typeof ActionView>;

/** The campaign as events name it: who it is, not its counters. */
export const CampaignRef = z.strictObject({
  id: z.string(),
  name: z.string(),
  status: z.enum(CAMPAIGN_STATUSES),
  currencyISO: z.string(),
});
export type CampaignRef = z.infer<typeof CampaignRef>;

/** A participant import, as its `GET` answers it (`serializeImport`). */
export const ParticipantImportView = z.strictObject({
  id: z.string(),
  campaignId: z.string(),
  status: z.enum(IMPORT_STATUSES),
  mode: z.enum(IMPORT_COUNT_MODES),
  silent: z.boolean(),
  format: z.enum(IMPORT_FORMATS),
  columns: z.array(z.string()),
  sizeBytes: z.number().int(),
  rowsTotal: z.number().int().nullable(),
  rowsDone: z.number().int(),
  created: z.number().int(),
  updated: z.number().int(),
  unchanged: z.number().int(),
  refused: z.number().int(),
  loyaltyActionsQueued: z.number().int(),
  refusedRows: z.array(z.strictObject({ row: z.number().int(), reason: z.string(), message: z.string() })),
  refusedRowsUrl: z.string(),
  error: text,
  createdAt: time,
  startedAt: time.nullable(),
  finishedAt: time.nullable(),
});
export type ParticipantImportView = z.infer<typeof ParticipantImportView>;

/** An entry of the audit log (`serializeAuditEntry`): a change, who made it, and the columns it changed. */
export const AuditEntryView = z.strictObject({
  id: z.string(),
  at: time,
  accountId: text,
  campaignId: text,
  actor: z.strictObject({
    kind: z.enum(AUDIT_ACTOR_KINDS),
    id: text,
    userId: text,
    requestId: text,
    via: text,
  }),
  entity: z.enum(AUDIT_ENTITIES),
  entityId: z.string(),
  action: z.enum(AUDIT_ACTIONS),
  before: z.record(z.string(), z.unknown()).nullable(),
  after: z.record(z.string(), z.unknown()).nullable(),
});
export type AuditEntryView = z.infer<typeof AuditEntryView>;
