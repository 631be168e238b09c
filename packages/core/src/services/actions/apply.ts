import {
  anyOf,
  builtOnce,
  campaigns,
  inOrder,
  loyaltyActions,
  participants,
  rewards,
  rowsInOrder,
  type Tx,
  tableRows,
} from '@stampcard/db';
import { asc, eq, sql } from 'drizzle-orm';
import { QueryBuilder } from 'drizzle-orm/pg-core';
import { monthKey } from '../../clock';
import { type Ctx, handOff, unitOfWork } from '../../context';
import { compareIds } from '../../ids';
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
import { eventsInsert, type NewEvent } from '../events';
import { bucketChanges, moveBucketsStatement } from '../leaderboard/buckets';
import { settleQueuedActions } from '../queued-actions';
import { decideUnlock, EARNED, loadUnlockState, unlockWrites } from './unlock';

export type AppliedAction = {
  id: string;
  status: ActionRow['status'];
  unlockedRewardIds: string[];
  reason?: string;
  /** When it was accepted. */
  createdAt: Date;
  /** The events its application recorded (none for a rejected or a silent one). */
  eventIds?: string[];
};

/** The batch's reads behind its claim, built once (`builtOnce`), each with its list of ids as `ids`. */
const READS = (() => {
  const qb = new QueryBuilder();
  const ids = sql.placeholder('ids');
  return {
    /** The participants, locked in id order (the order every writer of them locks them in). */
    lockParticipants: builtOnce(
      qb
        .select()
        .from(participants)
        .where(anyOf(participants.id, ids))
        .orderBy(asc(participants.id))
        .for('update'),
    ),
    rewards: builtOnce(qb.select().from(rewards).where(anyOf(rewards.id, ids))),
    campaigns: builtOnce(qb.select().from(campaigns).where(anyOf(campaigns.id, ids))),
  };
})();

/**
 * The most QUEUED actions of its participants a batch looks up to apply with its own (see `applyActions`): past
 * it, in a backlog of more than this many actions of its participants, the rest are applied by their own
 * batches, and may be applied after a later one.
 */
export const EARLIER_ACTIONS_MAX = 1000;

/**
 * Every QUEUED action of the participants of `ids` accepted before (or with) the latest of `ids` of the same
 * participant, oldest first, up to `EARLIER_ACTIONS_MAX`: the batch applies them with its own, so that a
 * participant's actions are applied in the order they were accepted (`created_at`, then `id`, which grows
 * within a millisecond: `newActionId`), whichever of their jobs a worker takes first. A statement of its own,
 * before the claim, so the claim keeps its plan (`id = any($1)` by primary key, `statusByKey`). Plans that do not
 * depend on the planner's estimates (a fresh table is unanalysed, and the QUEUED rows come and go): `ids` by key
 * (no `status` test, which would offer the partial index; an id no longer QUEUED only adds its participant),
 * then one range of `loyalty_actions_participant_queued_idx`, the only index of QUEUED rows, per participant.
 */
async function earlierOfTheirParticipants(db: Tx, ids: string[]): Promise<string[]> {
  const rows = await db.execute<{ id: string }>(sql`
    select e.id from (
        select participant_id, max(created_at) as upto from ${loyaltyActions}
        where id = any(${sql.param(ids)}::text[])
        group by participant_id
      ) m
      cross join lateral (
        select q.id, q.created_at from ${loyaltyActions} q
        where q.participant_id = m.participant_id and q.status = 'QUEUED' and q.created_at <= m.upto
        order by q.created_at
        limit ${EARLIER_ACTIONS_MAX}
      ) e
    order by e.created_at
    limit ${EARLIER_ACTIONS_MAX}`);
  return rows.map((r) => r.id);
}

/**
 * The worker's half: applies queued actions, each exactly once, all in ONE transaction (a batch), with the
 * earlier QUEUED actions of the same participants (`earlierOfTheirParticipants`): a participant's actions
 * are counted in the order they were accepted, so the one that reaches a goal is the one that unlocks it,
 * even when a later action's job is taken before an earlier one's. An action no longer QUEUED (a redelivered
 * or re-enqueued job, or one an earlier batch applied with its participant's later one) is skipped. Rows are locked in a fixed
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
    const given = [...new Set(actionIds)];
    const earlier = await earlierOfTheirParticipants(db, given);
    const claimed = await settleQueuedActions(
      db,
      { ids: [...new Set([...given, ...earlier])] },
      { status: 'APPLIED', appliedAt: now },
    ).returning();
    if (claimed.length === 0) return [];
    claimed.sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || compareIds(a.id, b.id));

    // The participants' lock, the reads of their rewards and campaigns, and their earnings so far go out
    // together, in that order (`rowsInOrder`): one round trip instead of four. The earnings are
    // read behind the lock, so that another batch's unlocks of these participants are committed and seen; they
    // are read before the batch knows which rewards are limited, and only those rewards' rows are kept. None of
    // the three reads locks anything.
    const participantIds = [...new Set(claimed.map((a) => a.participantId))];
    const rewardIds = [...new Set(claimed.map((a) => a.rewardId))];
    const [pRaw, rRaw, cRaw, earnedRows] = await rowsInOrder(db, [
      { statement: READS.lockParticipants, values: { ids: participantIds } },
      { statement: READS.rewards, values: { ids: rewardIds } },
      { statement: READS.campaigns, values: { ids: [...new Set(claimed.map((a) => a.campaignId))] } },
      { statement: EARNED, values: { participants: participantIds, rewards: rewardIds, month } },
    ]);
    const pRows = tableRows(participants, pRaw!);
    const rRows = tableRows(rewards, rRaw!);
    const cRows = tableRows(campaigns, cRaw!);
    const byParticipant = new Map(pRows.map((p) => [p.id, { ...p }]));
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
      earnedRows!,
    );

    const results: AppliedAction[] = [];
    const outbox: NewEvent[] = [];
    // The action each outbox event comes from, by position: each applied action learns its events' ids.
    const causes: AppliedAction[] = [];
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
          createdAt: action.createdAt,
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
      results.push({
        id: action.id,
        status: 'APPLIED',
        unlockedRewardIds: unlockedIds,
        createdAt: action.createdAt,
      });
      // A count an import carried over with `silent=true` is counted and unlocks, and records no event.
      if (action.silent) continue;
      const participantView = serializeParticipant(p, { now });
      const campaignView = campaignRef(campaign);
      causes.push(results.at(-1)!);
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
        causes.push(results.at(-1)!);
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
    }

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
    const participantsWrite =
      rows.length === 0
        ? []
        : [
            sql`
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
        where p.id = v.id`,
          ];
    // Campaign rows are shared by every batch: their counters move last, right before commit.
    const campaignCounters = [...campaignDelta]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([id, d]) =>
        db
          .update(campaigns)
          .set({
            loyaltyActionCount: sql`${campaigns.loyaltyActionCount} + ${d.actions}`,
            winnerCount: sql`${campaigns.winnerCount} + ${d.winners}`,
          })
          .where(eq(campaigns.id, id)),
      );
    // The new rewards (on their actions too), the events, the participants with their buckets, and the
    // campaigns' counters are sent together, in that order (`inOrder`): one round trip for all.
    // The locks are taken in the order above, and the shared rows (buckets, campaigns) are held from their
    // statement to the commit with no round trip between.
    const recorded = eventsInsert(tx, outbox);
    await inOrder(db, [
      ...unlockWrites(unlocks),
      ...(recorded.statement ? [recorded.statement] : []),
      ...participantsWrite,
      ...campaignCounters,
    ]);
    await handOff(tx, { eventIds: recorded.ids });
    recorded.ids.forEach((id, i) => {
      const cause = causes[i]!;
      cause.eventIds = [...(cause.eventIds ?? []), id];
    });
    return results;
  });
}
