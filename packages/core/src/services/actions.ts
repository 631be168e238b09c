import {
  campaigns,
  loyaltyActions,
  type Metadata,
  participantRewards,
  participants,
  rewards,
} from '@stampcard/db';
import { and, asc, eq, inArray, sql } from 'drizzle-orm';
import { monthKey } from '../clock';
import { assertLive, type Ctx, unitOfWork } from '../context';
import { DomainError, invalidState, notFound } from '../errors';
import { newId } from '../ids';
import { monthlyCountersAt } from '../rules/months';
import { goalCount, hasWinnersCap, limitAllows, reachesGoal } from '../rules/unlock';
import {
  type ActionRow,
  type CampaignRow,
  campaignRef,
  type ParticipantRewardRow,
  type ParticipantRow,
  type RewardRow,
  serializeAction,
  serializeParticipant,
  serializeParticipantRewardWithReward,
} from '../serialize';
import { type NewEvent, recordEvents } from './events';
import { ensureParticipant, type NewParticipantInput, participantMatches } from './participants';

export type AcceptActionInput = {
  rewardId: string;
  metadata?: Metadata | null;
  /** Who performed the action: by email (created when allowed) or by participant id. */
  participant:
    | { email: string; addIfNoneExists: boolean; profile: Omit<NewParticipantInput, 'email' | 'metadata'> }
    | { id: string };
  /** Identifies the request (key, method, path, body): an identical one while this is QUEUED is refused. */
  requestHash?: string;
  request?: { method: string; path: string };
};

const INFLIGHT_INDEX = 'loyalty_actions_inflight_uq';

/**
 * The API's half of a loyalty action: every check that must answer now, then the action is written to the
 * ledger as QUEUED (with a new participant, if one is created) in one transaction. The caller enqueues it.
 */
export async function acceptLoyaltyAction(ctx: Ctx, campaign: CampaignRow, input: AcceptActionInput) {
  if (campaign.status !== 'IN_PROGRESS') {
    throw invalidState(
      `The campaign is ${campaign.status}: loyalty actions are accepted only while it is IN_PROGRESS`,
    );
  }
  const who = input.participant;
  // One round trip answers both questions: is the reward this campaign's, and does the participant exist?
  const [found] = await ctx.db
    .select({ rewardId: rewards.id, participant: participants })
    .from(rewards)
    .leftJoin(
      participants,
      and(
        eq(participants.campaignId, rewards.campaignId),
        participantMatches('id' in who ? who.id : who.email),
      ),
    )
    .where(and(eq(rewards.id, input.rewardId), eq(rewards.campaignId, campaign.id)))
    .limit(1);
  if (!found) throw notFound(`Reward ${input.rewardId} in campaign ${campaign.id}`);

  const newAction = (participantId: string) => ({
    id: newId('action'),
    campaignId: campaign.id,
    participantId,
    rewardId: input.rewardId,
    status: 'QUEUED' as const,
    metadata: input.metadata ?? null,
    requestHash: input.requestHash ?? null,
    createdAt: ctx.clock.now(),
  });
  try {
    if (found.participant) {
      // The common case is a single statement: no transaction round trips.
      assertLive(ctx);
      const [action] = await ctx.db
        .insert(loyaltyActions)
        .values(newAction(found.participant.id))
        .returning();
      return { action: action!, participant: found.participant, participantCreated: false };
    }
    if ('id' in who) throw notFound(`Participant ${who.id} in campaign ${campaign.id}`);
    if (!who.addIfNoneExists) {
      throw notFound(
        `Participant ${who.email} in campaign ${campaign.id} (addParticipantIfNoneExists is false)`,
      );
    }
    return await unitOfWork(ctx, async (tx) => {
      const { db } = tx;
      const { participant, created } = await ensureParticipant(
        tx,
        campaign,
        { ...who.profile, email: who.email, metadata: input.metadata ?? null },
        'DIRECT',
      );
      const [action] = await db.insert(loyaltyActions).values(newAction(participant.id)).returning();
      return { action: action!, participant, participantCreated: created };
    });
  } catch (err) {
    if (isUniqueViolation(err, INFLIGHT_INDEX) && input.requestHash) {
      const [first] = await ctx.db
        .select({ createdAt: loyaltyActions.createdAt, id: loyaltyActions.id })
        .from(loyaltyActions)
        .where(and(eq(loyaltyActions.requestHash, input.requestHash), eq(loyaltyActions.status, 'QUEUED')))
        .limit(1);
      throw new DomainError(
        'DUPLICATE_REQUEST',
        'An identical request is still being processed: wait for it to finish before sending it again',
        {
          request: {
            method: input.request?.method ?? 'POST',
            path: input.request?.path ?? '',
            startedAt: (first?.createdAt ?? ctx.clock.now()).getTime(),
          },
        },
        { cause: err },
      );
    }
    throw err;
  }
}

function isUniqueViolation(err: unknown, constraint: string): boolean {
  const e = (err as { cause?: unknown }).cause ?? err;
  const pg = e as { code?: string; constraint_name?: string };
  return pg.code === '23505' && pg.constraint_name === constraint;
}

export async function getAction(ctx: Ctx, campaignId: string, actionId: string) {
  const [action] = await ctx.db
    .select()
    .from(loyaltyActions)
    .where(and(eq(loyaltyActions.id, actionId), eq(loyaltyActions.campaignId, campaignId)))
    .limit(1);
  if (!action) throw notFound(`Loyalty action ${actionId}`);
  const unlocked =
    action.unlockedRewardIds.length > 0
      ? await ctx.db
          .select()
          .from(participantRewards)
          .where(inArray(participantRewards.id, action.unlockedRewardIds))
          .orderBy(asc(participantRewards.createdAt))
      : [];
  return serializeAction(action, unlocked);
}

/** Polls the ledger until the action leaves QUEUED or `timeoutMs` passes; answers its state either way. */
export async function waitForAction(ctx: Ctx, campaignId: string, actionId: string, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  let delay = 10;
  for (;;) {
    const state = await getAction(ctx, campaignId, actionId);
    if (state.status !== 'QUEUED' || Date.now() >= deadline || ctx.signal?.aborted) return state;
    await new Promise((r) => setTimeout(r, Math.min(delay, Math.max(0, deadline - Date.now()))));
    delay = Math.min(delay * 2, 100);
  }
}

export type AppliedAction = {
  id: string;
  status: ActionRow['status'];
  unlockedRewardIds: string[];
  reason?: string;
};

/**
 * The worker's half: applies queued actions, each exactly once, all in ONE transaction (a batch).
 * An action no longer QUEUED (a redelivered or re-enqueued job) is skipped. Rows are locked in a fixed
 * order (actions, participants by id, capped rewards by id, campaigns by id) so that concurrent batches
 * cannot deadlock and never over-award. Counts, unlocks, counters and outbox events commit together.
 */
export async function applyActions(ctx: Ctx, actionIds: string[]): Promise<AppliedAction[]> {
  return (await applyActionBatch(ctx, actionIds)).applied;
}

/** `applyActions`, also answering the ids of the events the batch wrote (for the dispatcher, after commit). */
export async function applyActionBatch(
  ctx: Ctx,
  actionIds: string[],
): Promise<{ applied: AppliedAction[]; eventIds: string[] }> {
  if (actionIds.length === 0) return { applied: [], eventIds: [] };
  return ctx.db.transaction(async (db) => {
    const tx: Ctx = { ...ctx, db };
    const now = ctx.clock.now();
    const month = monthKey(now);
    const claimed = await db
      .update(loyaltyActions)
      .set({ status: 'APPLIED', appliedAt: now })
      .where(
        // Lock the rows in id order, like every other lock here, whatever order the scan would take.
        inArray(
          loyaltyActions.id,
          db
            .select({ id: loyaltyActions.id })
            .from(loyaltyActions)
            .where(
              and(inArray(loyaltyActions.id, [...new Set(actionIds)]), eq(loyaltyActions.status, 'QUEUED')),
            )
            .orderBy(asc(loyaltyActions.id))
            .for('update'),
        ),
      )
      .returning();
    if (claimed.length === 0) return { applied: [], eventIds: [] };
    claimed.sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || a.id.localeCompare(b.id));

    const pRows = await db
      .select()
      .from(participants)
      .where(inArray(participants.id, [...new Set(claimed.map((a) => a.participantId))]))
      .orderBy(asc(participants.id))
      .for('update');
    const byParticipant = new Map(pRows.map((p) => [p.id, { ...p }]));
    const rRows = await db
      .select()
      .from(rewards)
      .where(inArray(rewards.id, [...new Set(claimed.map((a) => a.rewardId))]));
    const byReward = new Map(rRows.map((r) => [r.id, r]));
    const capped = rRows
      .filter(hasWinnersCap)
      .map((r) => r.id)
      .sort();
    if (capped.length > 0) {
      await db
        .select({ id: rewards.id })
        .from(rewards)
        .where(inArray(rewards.id, capped))
        .orderBy(asc(rewards.id))
        .for('update');
    }
    const cRows = await db
      .select()
      .from(campaigns)
      .where(inArray(campaigns.id, [...new Set(claimed.map((a) => a.campaignId))]));
    const byCampaign = new Map(cRows.map((c) => [c.id, c]));

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
      Object.assign(p, monthlyCountersAt(p, month));
      p.loyaltyActionCount += 1;
      p.monthlyLoyaltyActionCount += 1;
      const total = (p.loyaltyActionCountsPerReward[reward.id] ?? 0) + 1;
      const monthly = (p.monthlyLoyaltyActionCountsPerReward[reward.id] ?? 0) + 1;
      p.loyaltyActionCountsPerReward = { ...p.loyaltyActionCountsPerReward, [reward.id]: total };
      p.monthlyLoyaltyActionCountsPerReward = {
        ...p.monthlyLoyaltyActionCountsPerReward,
        [reward.id]: monthly,
      };
      p.updatedAt = now;
      const delta = campaignDelta.get(campaign.id) ?? { actions: 0, winners: 0 };
      delta.actions += 1;

      const unlocked = reachesGoal(reward, goalCount(reward, { total, monthly }))
        ? await unlockIfAllowed(tx, { action, participant: p, reward, campaign, month, now })
        : null;
      if (unlocked?.approved) {
        if (p.approvedRewardCount === 0) delta.winners += 1;
        p.approvedRewardCount += 1;
      }
      campaignDelta.set(campaign.id, delta);

      const unlockedIds = unlocked ? [unlocked.id] : [];
      if (unlocked) {
        await db
          .update(loyaltyActions)
          .set({ unlockedRewardIds: unlockedIds })
          .where(eq(loyaltyActions.id, action.id));
      }
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
        updated_at: p.updatedAt.toISOString(),
      };
    });
    if (rows.length > 0) {
      await db.execute(sql`
        update ${participants} as p set
          loyalty_action_count = v.loyalty_action_count,
          counts_month = v.counts_month,
          monthly_loyalty_action_count = v.monthly_loyalty_action_count,
          prev_monthly_loyalty_action_count = v.prev_monthly_loyalty_action_count,
          loyalty_action_counts_per_reward = v.loyalty_action_counts_per_reward,
          monthly_loyalty_action_counts_per_reward = v.monthly_loyalty_action_counts_per_reward,
          approved_reward_count = v.approved_reward_count,
          updated_at = v.updated_at
        from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as v(
          id text, loyalty_action_count integer, counts_month text, monthly_loyalty_action_count integer,
          prev_monthly_loyalty_action_count integer, loyalty_action_counts_per_reward jsonb,
          monthly_loyalty_action_counts_per_reward jsonb, approved_reward_count integer, updated_at timestamptz)
        where p.id = v.id`);
    }
    const eventIds = await recordEvents(tx, outbox);
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
    return { applied: results, eventIds };
  });
}

/** Applies the limits of contract section 4; the caller holds the participant's row (and a capped reward's). */
async function unlockIfAllowed(
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

/** Accepted actions still QUEUED and older than `graceMs`: what the relay makes sure is in the queue. */
export async function findStaleQueuedActions(ctx: Ctx, graceMs: number, limit = 1000): Promise<string[]> {
  const cutoff = new Date(ctx.clock.now().getTime() - graceMs);
  const rows = await ctx.db
    .select({ id: loyaltyActions.id })
    .from(loyaltyActions)
    .where(
      and(
        eq(loyaltyActions.status, 'QUEUED'),
        sql`${loyaltyActions.createdAt} <= ${cutoff.toISOString()}::timestamptz`,
      ),
    )
    .orderBy(asc(loyaltyActions.createdAt))
    .limit(limit);
  return rows.map((r) => r.id);
}
