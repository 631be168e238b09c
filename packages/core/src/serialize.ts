import type {
  campaigns,
  formSubmissions,
  loyaltyActions,
  participantRewards,
  participants,
  rewards,
} from '@stampcard/db';
import { monthKey } from './clock';
import { monthlyCountersAt } from './rules/months';
import {
  type ActionView,
  type CampaignRef,
  EMBEDDED_REWARDS,
  type FormSubmissionView,
  type ParticipantRewardView,
  type ParticipantRewardWithRewardView,
  type ParticipantView,
  type RewardView,
} from './views';

export type CampaignRow = typeof campaigns.$inferSelect;
export type RewardRow = typeof rewards.$inferSelect;
export type ParticipantRow = typeof participants.$inferSelect;
export type ParticipantRewardRow = typeof participantRewards.$inferSelect;
export type ActionRow = typeof loyaltyActions.$inferSelect;
export type FormSubmissionRow = typeof formSubmissions.$inferSelect;

const ms = (d: Date | null) => (d ? d.getTime() : null);

/** The whole Reward, as webhooks and the operator API show it. */
export function serializeReward(r: RewardRow): RewardView {
  return {
    id: r.id,
    title: r.title,
    description: r.description,
    subdescription: r.subdescription,
    instructions: r.instructions,
    cta: r.cta,
    submissionType: r.submissionType,
    submissionExampleUrl: r.submissionExampleUrl,
    submissionFormUrl: r.submissionFormUrl,
    submissionFormFields: r.submissionFormFields,
    submissionFormButtonText: r.submissionFormButtonText,
    submissionFormMessages: r.submissionFormMessages,
    isUnlimited: r.isUnlimited,
    limit: r.isUnlimited ? -1 : r.limit,
    conversionsRequired: r.conversionsRequired,
    limitDuration: r.limitDuration,
    numberOfWinners: r.numberOfWinners,
    couponCode: r.couponCode,
    imageUrl: r.imageUrl,
    order: r.order,
    metadata: r.metadata ?? {},
  };
}

/** Campaign reads show rewards as the seed's examples do: without the internal and limit fields. */
export function serializeCampaignReward(r: RewardRow) {
  const { title, order, limitDuration, numberOfWinners, couponCode, metadata, ...rest } = serializeReward(r);
  return rest;
}

export function sortRewards(rs: RewardRow[]): RewardRow[] {
  return [...rs].sort(
    (a, b) =>
      (a.order ?? Number.MAX_SAFE_INTEGER) - (b.order ?? Number.MAX_SAFE_INTEGER) ||
      a.createdAt.getTime() - b.createdAt.getTime() ||
      a.id.localeCompare(b.id),
  );
}

export function serializeCampaign(c: CampaignRow, rs: RewardRow[]) {
  return {
    id: c.id,
    name: c.name,
    loyaltyActionCount: c.loyaltyActionCount,
    participantCount: c.participantCount,
    winnerCount: c.winnerCount,
    status: c.status,
    currencyISO: c.currencyISO,
    rewards: sortRewards(rs).map(serializeCampaignReward),
  };
}

/** The campaign as events name it. */
export function campaignRef(c: CampaignRow): CampaignRef {
  return { id: c.id, name: c.name, status: c.status, currencyISO: c.currencyISO };
}

/** The campaign with its settings, as the operator API shows it. */
export function serializeCampaignForOperator(c: CampaignRow, rs: RewardRow[]) {
  return {
    ...serializeCampaign(c, []),
    accountId: c.accountId,
    requireRewardApproval: c.requireRewardApproval,
    antiFraud: c.antiFraud,
    pointsConversion: c.pointsConversion,
    createdAt: c.createdAt.getTime(),
    rewards: sortRewards(rs).map(serializeReward),
  };
}

export function serializeParticipantReward(pr: ParticipantRewardRow): ParticipantRewardView {
  return {
    id: pr.id,
    rewardId: pr.rewardId,
    participantId: pr.participantId,
    status: pr.status,
    isAvailable: pr.approved && !pr.isFulfilled,
    approved: pr.approved,
    approvedAt: ms(pr.approvedAt),
    isFulfilled: pr.isFulfilled,
    fulfilledAt: ms(pr.fulfilledAt),
    unread: pr.unread,
    createdAt: pr.createdAt.getTime(),
  };
}

/** In webhooks a ParticipantReward also carries the details of its program Reward. */
export function serializeParticipantRewardWithReward(
  pr: ParticipantRewardRow,
  reward: RewardRow,
): ParticipantRewardWithRewardView {
  const { id: _rewardId, ...details } = serializeReward(reward);
  return { ...details, ...serializeParticipantReward(pr) };
}

/** Where a participant's whole reward history is paged (a path on the API's own origin). */
export const participantRewardsPath = (p: Pick<ParticipantRow, 'campaignId' | 'id'>) =>
  `/v1/campaign/${encodeURIComponent(p.campaignId)}/participant/${encodeURIComponent(p.id)}/rewards`;

export type Ranks = { rank: number; monthlyRank: number; prevMonthlyRank: number | null };

/**
 * The Participant object. Monthly figures are shown as they stand in `now`'s month. The per-reward maps are
 * absent when empty, and are given under both spellings the seed uses (declared `…CountsPerReward`,
 * `…CountPerReward` in its response examples).
 *
 * `rewards`, when given, are the participant's newest (`newestRewardsOf`), newest first: at most
 * `EMBEDDED_REWARDS` of them are shown, with `rewardCount` (all it holds), `moreRewards` (some are not shown)
 * and `rewardsUrl` (where all are paged). Events leave them out.
 */
export function serializeParticipant(
  p: ParticipantRow,
  opts: { now: Date; rewards?: ParticipantRewardRow[]; ranks?: Ranks },
): ParticipantView {
  const monthly = monthlyCountersAt(p, monthKey(opts.now));
  const perReward = p.loyaltyActionCountsPerReward;
  const monthlyPerReward = monthly.monthlyLoyaltyActionCountsPerReward;
  const out: ParticipantView = {
    id: p.id,
    firstName: p.firstName,
    lastName: p.lastName,
    email: p.email,
    loyaltyActionCount: p.loyaltyActionCount,
    prevLoyaltyActionCount: p.loyaltyActionCount - monthly.monthlyLoyaltyActionCount,
    monthlyLoyaltyActionCount: monthly.monthlyLoyaltyActionCount,
    prevMonthlyLoyaltyActionCount: monthly.prevMonthlyLoyaltyActionCount,
    createdAt: p.createdAt.getTime(),
    fraudRiskLevel: p.fraudRiskLevel,
    fraudReasonCode: p.fraudReasonCode,
    isWinner: p.approvedRewardCount > 0,
    loyaltyActionSource: p.loyaltyActionSource,
    notes: p.notes,
    metadata: p.metadata ?? {},
  };
  if (Object.keys(perReward).length > 0) {
    out.loyaltyActionCountsPerReward = perReward;
    out.loyaltyActionCountPerReward = perReward;
  }
  if (Object.keys(monthlyPerReward).length > 0) {
    out.monthlyLoyaltyActionCountsPerReward = monthlyPerReward;
    out.monthlyLoyaltyActionCountPerReward = monthlyPerReward;
  }
  if (opts.rewards) {
    const shown = opts.rewards.slice(0, EMBEDDED_REWARDS);
    out.rewards = shown.map(serializeParticipantReward);
    out.rewardCount = p.rewardCount;
    out.moreRewards = p.rewardCount > shown.length;
    out.rewardsUrl = participantRewardsPath(p);
  }
  if (opts.ranks) {
    out.rank = opts.ranks.rank;
    out.monthlyRank = opts.ranks.monthlyRank;
    if (opts.ranks.prevMonthlyRank !== null) out.prevMonthlyRank = opts.ranks.prevMonthlyRank;
  }
  return out;
}

export function serializeAction(a: ActionRow, unlocked?: ParticipantRewardRow[]): ActionView {
  const out: ActionView = {
    id: a.id,
    status: a.status,
    participantId: a.participantId,
    rewardId: a.rewardId,
    createdAt: a.createdAt.getTime(),
    appliedAt: ms(a.appliedAt),
  };
  if (unlocked) out.unlockedRewards = unlocked.map(serializeParticipantReward);
  if (a.reason) out.reason = a.reason;
  return out;
}

/** A form submission as the API and webhooks show it; the participant's email travels with it. */
export function serializeFormSubmission(s: FormSubmissionRow, participantEmail: string): FormSubmissionView {
  return {
    id: s.id,
    participantId: s.participantId,
    participantEmail,
    rewardId: s.rewardId,
    status: s.status,
    // The keys are the reward's field keys, checked on the way in; kept off any prototype all the same.
    formData: Object.assign(Object.create(null) as Record<string, string>, s.formData),
    createdAt: s.createdAt.getTime(),
    reviewedAt: s.reviewedAt ? s.reviewedAt.getTime() : null,
  };
}
