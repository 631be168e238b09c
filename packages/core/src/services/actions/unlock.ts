import { participantRewards } from '@stampcard/db';
import { and, eq, sql } from 'drizzle-orm';
import type { Ctx } from '../../context';
import { newId } from '../../ids';
import { hasWinnersCap, limitAllows } from '../../rules/unlock';
import type {
  ActionRow,
  CampaignRow,
  ParticipantRewardRow,
  ParticipantRow,
  RewardRow,
} from '../../serialize';

/** Applies the limits of contract section 4; the caller holds the participant's row (and a capped reward's). */
export async function unlockIfAllowed(
  ctx: Ctx,
  a: {
    action: ActionRow;
    participant: ParticipantRow;
    reward: RewardRow;
    campaign: CampaignRow;
    month: string;
    now: Date;
  },
): Promise<ParticipantRewardRow | null> {
  const { db } = ctx;
  const { reward, participant, month } = a;
  const perMonth = reward.limitDuration === 'PER_MONTH';
  const mine = and(
    eq(participantRewards.participantId, participant.id),
    eq(participantRewards.rewardId, reward.id),
    perMonth ? eq(participantRewards.earnedMonth, month) : undefined,
  );
  const [earned] = await db
    .select({ n: sql<number>`count(*)`.mapWith(Number) })
    .from(participantRewards)
    .where(mine);
  let winners: { count: number; includesParticipant: boolean } | undefined;
  if (hasWinnersCap(reward)) {
    const [w] = await db
      .select({
        count: sql<number>`count(distinct ${participantRewards.participantId})`.mapWith(Number),
        mine: sql<number>`count(*) filter (where ${participantRewards.participantId} = ${participant.id})`.mapWith(
          Number,
        ),
      })
      .from(participantRewards)
      .where(and(eq(participantRewards.rewardId, reward.id), eq(participantRewards.earnedMonth, month)));
    winners = { count: w?.count ?? 0, includesParticipant: (w?.mine ?? 0) > 0 };
  }
  if (limitAllows(reward, earned?.n ?? 0, winners) !== null) return null;
  const approved = !a.campaign.requireRewardApproval;
  const [row] = await db
    .insert(participantRewards)
    .values({
      id: newId('participantReward'),
      campaignId: a.campaign.id,
      participantId: participant.id,
      rewardId: reward.id,
      actionId: a.action.id,
      status: 'PENDING',
      approved,
      approvedAt: approved ? a.now : null,
      earnedMonth: month,
      createdAt: a.now,
    })
    .returning();
  return row!;
}
