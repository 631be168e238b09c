import { anyOf, campaigns, loyaltyActions, participants, rewards } from '@stampcard/db';
import { asc, eq, sql } from 'drizzle-orm';
import { monthKey } from '../../clock';
import { type Ctx, unitOfWork } from '../../context';
import { countAction } from '../../rules/counters';
import { boardsChangedByAction, bucketMoves } from '../../rules/leaderboard';
import { goalCount, hasWinnersCap, reachesGoal } from '../../rules/unlock';
import {
  type ActionRow,
  campaignRef,
  serializeAction,
  serializeParticipant,
  serializeParticipantRewardWithReward,
} from '../../serialize';
import { type NewEvent, recordEvents } from '../events';
import { bucketChanges, moveBucketsStatement } from '../leaderboard/buckets';
import { settleQueuedActions } from '../queued-actions';
import { decideUnlock, loadUnlockState, writeUnlocks } from './unlock';

export type AppliedAction = {
  id: string;
  status: ActionRow['status'];
  unlockedRewardIds: string[];
  reason?: string;
};

/**
 * The worker's half: applies queued actions, each exactly once, all in ONE transaction (a batch).
 * An action no longer QUEUED (a redelivered or re-enqueued job) is skipped. Rows are locked in a fixed
 * order (actions, participants by id, capped rewards by id, leaderboard buckets by campaign, board and score,
 * campaigns by id) so that concurrent batches cannot deadlock and never over-award. Counts, leaderboard
 * buckets, unlocks, counters and outbox events commit together; the events are handed on after commit
 * (`ctx.afterCommit`).
 */
export async function applyActions(ctx: Ctx, actionIds: string[]): Promise<AppliedAction[]> {
  if (actionIds.length === 0) return [];
  return unitOfWork(ctx, async (tx) => {
    const { db } = tx;
    const now = ctx.clock.now();
    const month = monthKey(now);
    const claimed = await settleQueuedActions(db, anyOf(loyaltyActions.id, [...new Set(actionIds)]), {
      status: 'APPLIED',
      appliedAt: now,
    }).returning();
    if (claimed.length === 0) return [];
    claimed.sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || a.id.localeCompare(b.id));

    const pRows = await db
      .select()
      .from(participants)
      .where(anyOf(participants.id, [...new Set(claimed.map((a) => a.participantId))]))
      .orderBy(asc(participants.id))
      .for('update');
    const byParticipant = new Map(pRows.map((p) => [p.id, { ...p }]));
    const rRows = await db
      .select()
      .from(rewards)
      .where(anyOf(rewards.id, [...new Set(claimed.map((a) => a.rewardId))]));
    const byReward = new Map(rRows.map((r) => [r.id, r]));
    const capped = rRows
      .filter(hasWinnersCap)
      .map((r) => r.id)
      .sort();
    if (capped.length > 0) {
      await db
        .select({ id: rewards.id })
        .from(rewards)
        .where(anyOf(rewards.id, capped))
        .orderBy(asc(rewards.id))
        .for('update');
    }
    const cRows = await db
      .select()
      .from(campaigns)
      .where(anyOf(campaigns.id, [...new Set(claimed.map((a) => a.campaignId))]));
    const byCampaign = new Map(cRows.map((c) => [c.id, c]));
    const unlocks = await loadUnlockState(
      tx,
      claimed.flatMap((a) => {
        const reward = byReward.get(a.rewardId);
        return reward && byParticipant.has(a.participantId)
          ? [{ participantId: a.participantId, reward }]
          : [];
      }),
      month,
    );

    const results: AppliedAction[] = [];
    const outbox: NewEvent[] = [];
    const campaignDelta = new Map<string, { actions: number; winners: number }>();
    const touched = new Set<string>();

    for (const action of claimed) {
      const p = byParticipant.get(action.participantId);
      const reward = byReward.get(action.rewardId);
      const campaign = byCampaign.get(action.campaignId);
      const reason = !p
        ? 'PARTICIPANT_NOT_FOUND'
        : !reward || reward.campaignId !== action.campaignId
          ? 'REWARD_NOT_FOUND'
          : !campaign
            ? 'CAMPAIGN_NOT_FOUND'
            : null;
      if (reason || !p || !reward || !campaign) {
        await db
          .update(loyaltyActions)
          .set({ status: 'REJECTED', reason: reason ?? 'UNKNOWN' })
          .where(eq(loyaltyActions.id, action.id));
        results.push({
          id: action.id,
          status: 'REJECTED',
          unlockedRewardIds: [],
          reason: reason ?? 'UNKNOWN',
        });
        continue;
      }
      touched.add(p.id);
      const { counters, total, monthly } = countAction(p, reward.id, month);
      Object.assign(p, counters);
      p.updatedAt = now;
      const delta = campaignDelta.get(campaign.id) ?? { actions: 0, winners: 0 };
      delta.actions += 1;

      const unlocked = reachesGoal(reward, goalCount(reward, { total, monthly }))
        ? decideUnlock(unlocks, { action, participant: p, reward, campaign, now })
        : null;
      if (unlocked) p.rewardCount += 1;
      if (unlocked?.approved) {
        if (p.approvedRewardCount === 0) delta.winners += 1;
        p.approvedRewardCount += 1;
      }
      campaignDelta.set(campaign.id, delta);

      const unlockedIds = unlocked ? [unlocked.id] : [];
      const participantView = serializeParticipant(p, { now });
      const campaignView = campaignRef(campaign);
      outbox.push({
        campaignId: campaign.id,
        type: 'LOYALTY_ACTION_APPLIED',
        data: {
          action: serializeAction({ ...action, unlockedRewardIds: unlockedIds }),
          participant: participantView,
          campaign: campaignView,
          ...(unlocked ? { unlockedRewards: [serializeParticipantRewardWithReward(unlocked, reward)] } : {}),
        },
      });
      if (unlocked?.approved) {
        outbox.push({
          campaignId: campaign.id,
          type: 'PARTICIPANT_REACHED_A_GOAL',
          data: {
            participant: participantView,
            reward: serializeParticipantRewardWithReward(unlocked, reward),
            campaign: campaignView,
          },
        });
      }
      results.push({ id: action.id, status: 'APPLIED', unlockedRewardIds: unlockedIds });
    }

    await writeUnlocks(tx, unlocks);
    await recordEvents(tx, outbox);
    // Every participant the batch touched, written back in one statement (rows already locked above).
    const rows = [...touched].sort().map((id) => {
      const p = byParticipant.get(id)!;
      return {
        id,
        loyalty_action_count: p.loyaltyActionCount,
        counts_month: p.countsMonth,
        monthly_loyalty_action_count: p.monthlyLoyaltyActionCount,
        prev_monthly_loyalty_action_count: p.prevMonthlyLoyaltyActionCount,
        loyalty_action_counts_per_reward: p.loyaltyActionCountsPerReward,
        monthly_loyalty_action_counts_per_reward: p.monthlyLoyaltyActionCountsPerReward,
        approved_reward_count: p.approvedRewardCount,
        reward_count: p.rewardCount,
        updated_at: p.updatedAt.toISOString(),
      };
    });
    // The leaderboard buckets follow in the same statement (a CTE, run once the participants' rows are locked
    // and before the campaigns'): out of each touched participant's old counts, into its new ones. Buckets are
    // shared by every batch of a campaign, like its row: so this statement comes after the events, as late as
    // the campaigns' counters, and their locks are held as briefly.
    const before = new Map(pRows.map((p) => [p.id, p]));
    const moves = bucketChanges(
      [...touched].map((id) => {
        const after = byParticipant.get(id)!;
        return {
          campaignId: after.campaignId,
          moves: bucketMoves(before.get(id)!, after, boardsChangedByAction(after)),
        };
      }),
    );
    if (rows.length > 0) {
      await db.execute(sql`
        ${moves.length > 0 ? sql`with buckets as (${moveBucketsStatement(moves)})` : sql``}
        update ${participants} as p set
          loyalty_action_count = v.loyalty_action_count,
          counts_month = v.counts_month,
          monthly_loyalty_action_count = v.monthly_loyalty_action_count,
          prev_monthly_loyalty_action_count = v.prev_monthly_loyalty_action_count,
          loyalty_action_counts_per_reward = v.loyalty_action_counts_per_reward,
          monthly_loyalty_action_counts_per_reward = v.monthly_loyalty_action_counts_per_reward,
          approved_reward_count = v.approved_reward_count,
          reward_count = v.reward_count,
          updated_at = v.updated_at
        from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as v(
          id text, loyalty_action_count integer, counts_month text, monthly_loyalty_action_count integer,
          prev_monthly_loyalty_action_count integer, loyalty_action_counts_per_reward jsonb,
          monthly_loyalty_action_counts_per_reward jsonb, approved_reward_count integer, reward_count integer,
          updated_at timestamptz)
        where p.id = v.id`);
    }
    // Campaign rows are shared by every batch: their counters move last, right before commit.
    for (const [id, d] of [...campaignDelta].sort(([a], [b]) => a.localeCompare(b))) {
      await db
        .update(campaigns)
        .set({
          loyaltyActionCount: sql`${campaigns.loyaltyActionCount} + ${d.actions}`,
          winnerCount: sql`${campaigns.winnerCount} + ${d.winners}`,
        })
        .where(eq(campaigns.id, id));
    }
    return results;
  });
}
