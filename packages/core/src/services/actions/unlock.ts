import { builtOnce, participantRewards } from '@stampcard/db';
import { type SQL, sql } from 'drizzle-orm';
import type { Ctx } from '../../context';
import { newId } from '../../ids';
import { rewardNeedsReview } from '../../rules/fraud';
import { hasWinnersCap, limitAllows } from '../../rules/unlock';
import type {
  ActionRow,
  CampaignRow,
  ParticipantRewardRow,
  ParticipantRow,
  RewardRow,
} from '../../serialize';

/**
 * What a batch's unlock decisions need, read once for the whole batch: each (participant, reward)'s earnings
 * so far, and for capped rewards this month's distinct winners. The caller holds the participants' rows and
 * the capped rewards' rows, so nothing else can change these while the batch decides; the decisions keep
 * them current in memory, and `unlockWrites` stores the new rewards at the end.
 */
export type UnlockState = {
  month: string;
  /** `participantId \n rewardId` → earnings in total and this month (limited rewards only). */
  earned: Map<string, { total: number; thisMonth: number }>;
  /** Capped reward id → this month's distinct winners, and which of the batch's participants are among them. */
  winners: Map<string, { count: number; includes: Set<string> }>;
  /** The rewards this batch unlocked, in order. */
  unlocked: ParticipantRewardRow[];
};

const pairKey = (participantId: string, rewardId: string) => `${participantId}\n${rewardId}`;

/**
 * The earnings of `participants` × `rewards` (placeholders, with `month`): each pair's count in total and this
 * month. Built once; the apply batch sends it right behind its participants' lock (`rowsInOrder`), before it
 * knows which rewards are limited, and `loadUnlockState` keeps the limited ones' rows.
 */
export const EARNED = builtOnce(sql`
  select participant_id as p, reward_id as r, count(*)::int as total,
    (count(*) filter (where earned_month = ${sql.placeholder('month')}))::int as this_month
  from ${participantRewards}
  where participant_id = any(${sql.placeholder('participants')}::text[])
    and reward_id = any(${sql.placeholder('rewards')}::text[])
  group by participant_id, reward_id`);

/**
 * The batch's unlock state: the earnings of its limited rewards, from `EARNED`'s rows (`earnedRows`, read with
 * the participants' lock), and the winners of its capped ones, read here in one statement with one array
 * parameter per list (the same text whatever the batch).
 */
export async function loadUnlockState(
  ctx: Ctx,
  pairs: { participantId: string; reward: RewardRow }[],
  month: string,
  earnedRows: unknown[][],
): Promise<UnlockState> {
  const state: UnlockState = { month, earned: new Map(), winners: new Map(), unlocked: [] };
  const limited = new Set(
    pairs.filter((p) => !p.reward.isUnlimited).map((p) => pairKey(p.participantId, p.reward.id)),
  );
  for (const [p, r, total, thisMonth] of earnedRows as [string, string, number, number][]) {
    const key = pairKey(p, r);
    if (limited.has(key)) state.earned.set(key, { total, thisMonth });
  }
  const capped = [...new Set(pairs.filter((p) => hasWinnersCap(p.reward)).map((p) => p.reward.id))];
  if (capped.length > 0) {
    const mine = [...new Set(pairs.map((p) => p.participantId))];
    const rows = await ctx.db.execute<{ r: string; n: number; mine: string[] | null }>(sql`
      select reward_id as r, count(distinct participant_id)::int as n,
        array_agg(distinct participant_id) filter (where participant_id = any(${sql.param(mine)}::text[])) as mine
      from ${participantRewards}
      where reward_id = any(${sql.param(capped)}::text[]) and earned_month = ${month}
      group by reward_id`);
    for (const id of capped) state.winners.set(id, { count: 0, includes: new Set() });
    for (const row of rows) state.winners.set(row.r, { count: row.n, includes: new Set(row.mine ?? []) });
  }
  return state;
}

/**
 * Applies the limits of contract section 4 to one goal reached, in memory: the reward is earned unless its
 * limit (in total, or this month for PER_MONTH) or this month's winners cap forbids it. An earned reward is
 * added to the state (so the batch's later actions see it) and answered; nothing is written yet.
 */
export function decideUnlock(
  state: UnlockState,
  a: { action: ActionRow; participant: ParticipantRow; reward: RewardRow; campaign: CampaignRow; now: Date },
): ParticipantRewardRow | null {
  const { reward, participant } = a;
  const key = pairKey(participant.id, reward.id);
  const earned = state.earned.get(key) ?? { total: 0, thisMonth: 0 };
  const winners = state.winners.get(reward.id);
  const earnedBefore = reward.limitDuration === 'PER_MONTH' ? earned.thisMonth : earned.total;
  const refusal = limitAllows(
    reward,
    earnedBefore,
    winners && { count: winners.count, includesParticipant: winners.includes.has(participant.id) },
  );
  if (refusal !== null) return null;
  state.earned.set(key, { total: earned.total + 1, thisMonth: earned.thisMonth + 1 });
  if (winners && !winners.includes.has(participant.id)) {
    winners.includes.add(participant.id);
    winners.count += 1;
  }
  // Rewards of a participant kept at MEDIUM or HIGH risk wait for manual approval (anti-fraud).
  const approved =
    !a.campaign.requireRewardApproval && !rewardNeedsReview(a.campaign.antiFraud, participant.fraudRiskLevel);
  const row: ParticipantRewardRow = {
    id: newId('participantReward'),
    campaignId: a.campaign.id,
    participantId: participant.id,
    rewardId: reward.id,
    actionId: a.action.id,
    status: 'PENDING',
    approved,
    approvedAt: approved ? a.now : null,
    isFulfilled: false,
    fulfilledAt: null,
    unread: true,
    earnedMonth: state.month,
    createdAt: a.now,
  };
  state.unlocked.push(row);
  return row;
}

/**
 * The statements that store the batch's new rewards and name them on their actions (`unlocked_reward_ids`):
 * two whatever their number, none when nothing was unlocked. The batch sends them with its other writes
 * (`inOrder`), first.
 */
export function unlockWrites(state: UnlockState): SQL[] {
  if (state.unlocked.length === 0) return [];
  const rows = state.unlocked.map((r) => ({
    id: r.id,
    campaign_id: r.campaignId,
    participant_id: r.participantId,
    reward_id: r.rewardId,
    action_id: r.actionId,
    status: r.status,
    approved: r.approved,
    approved_at: r.approvedAt?.toISOString() ?? null,
    is_fulfilled: r.isFulfilled,
    fulfilled_at: r.fulfilledAt?.toISOString() ?? null,
    unread: r.unread,
    earned_month: r.earnedMonth,
    created_at: r.createdAt.toISOString(),
  }));
  const insert = sql`
    insert into ${participantRewards} (id, campaign_id, participant_id, reward_id, action_id, status, approved,
      approved_at, is_fulfilled, fulfilled_at, unread, earned_month, created_at)
    select * from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as r(id text, campaign_id text,
      participant_id text, reward_id text, action_id text, status text, approved boolean,
      approved_at timestamptz, is_fulfilled boolean, fulfilled_at timestamptz, unread boolean,
      earned_month text, created_at timestamptz)`;
  const byAction = new Map<string, string[]>();
  for (const r of state.unlocked) {
    if (r.actionId) byAction.set(r.actionId, [...(byAction.get(r.actionId) ?? []), r.id]);
  }
  const named = sql`
    update loyalty_actions as a set unlocked_reward_ids = array(select jsonb_array_elements_text(v.ids))
    from jsonb_to_recordset(${JSON.stringify([...byAction].map(([id, ids]) => ({ id, ids })))}::jsonb)
      as v(id text, ids jsonb)
    where a.id = v.id`;
  return [insert, named];
}
