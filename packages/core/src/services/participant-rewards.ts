import {
  campaigns,
  notApprovedByKey,
  participantRewards,
  participants,
  rewards,
  type Tx,
} from '@stampcard/db';
import { and, asc, eq, sql } from 'drizzle-orm';
import { type Ctx, unitOfWork } from '../context';
import { invalidState, notFound } from '../errors';
import { itemsWithinBudget } from '../paging';
import {
  type CampaignRow,
  campaignRef,
  type ParticipantRewardRow,
  type ParticipantRow,
  serializeParticipant,
  serializeParticipantReward,
  serializeParticipantRewardWithReward,
} from '../serialize';
import type { ParticipantRewardView } from '../views';
import { type NewEvent, recordEvents } from './events';

/** Ties of `createdAt` are broken by id, byte by byte: the same order whatever the database's collation. */
const byteWiseId = sql`${participantRewards.id} collate "C"`;

/**
 * A participant's rewards, oldest first (by when they were earned, then id), cursor-paged: `nextId` is the id
 * of the first reward of the next page (null on the last one), given back as `nextId` to get that page. A
 * `nextId` that is not a reward of this participant is a 404.
 */
export async function listParticipantRewards(
  ctx: Ctx,
  participant: ParticipantRow,
  page: { limit: number; nextId?: string },
): Promise<{ rewards: ParticipantRewardView[]; limit: number; nextId: string | null; more: boolean }> {
  const mine = eq(participantRewards.participantId, participant.id);
  let from = sql`true`;
  if (page.nextId) {
    const [cursor] = await ctx.db
      .select({ id: participantRewards.id, createdAt: participantRewards.createdAt })
      .from(participantRewards)
      .where(and(eq(participantRewards.id, page.nextId), mine));
    if (!cursor) throw notFound(`Reward ${page.nextId} of participant ${participant.id}`);
    // Compared in SQL with the stored value itself, so no precision is lost on the way through JavaScript.
    from = sql`(${participantRewards.createdAt}, ${byteWiseId}) >= (
      select created_at, id collate "C" from ${participantRewards} where id = ${cursor.id})`;
  }
  const rows = await ctx.db
    .select()
    .from(participantRewards)
    .where(and(mine, from))
    .orderBy(asc(participantRewards.createdAt), asc(byteWiseId))
    .limit(page.limit + 1);
  // A reward is at most about 300 bytes, so the budget never cuts a page of 100 today; held to it like every list.
  const items = rows.slice(0, page.limit).map(serializeParticipantReward);
  const shown = itemsWithinBudget(items);
  const more = rows.length > shown;
  return {
    rewards: items.slice(0, shown),
    limit: page.limit,
    nextId: more ? rows[shown]!.id : null,
    more,
  };
}

/** What a change to a reward answers: the reward as it now stands. */
export type ParticipantRewardChange = { participantReward: ParticipantRewardView };

/**
 * Marks an approved, unfulfilled reward FULFILLED and records `PARTICIPANT_REWARD_FULFILLED`, inside the
 * caller's transaction. The one way a reward is fulfilled: by the API (`fulfill`, `approve` with `fulfill`)
 * and by a FULFILMENT endpoint's 2xx in the dispatcher. The update matches only a reward that is approved and
 * not yet fulfilled, so however many callers race (a replay, a second FULFILMENT endpoint, the API), one
 * fulfils it and records the event; the others get null and write nothing.
 */
export async function fulfilParticipantReward(
  ctx: Ctx,
  participantRewardId: string,
  now: Date,
): Promise<{ participantReward: ParticipantRewardRow } | null> {
  const { db } = ctx;
  const [pr] = await db
    .update(participantRewards)
    .set({ status: 'FULFILLED', isFulfilled: true, fulfilledAt: now })
    .where(
      and(
        eq(participantRewards.id, participantRewardId),
        eq(participantRewards.isFulfilled, false),
        eq(participantRewards.approved, true),
      ),
    )
    .returning();
  if (!pr) return null;
  const [found] = await db
    .select({ participant: participants, reward: rewards, campaign: campaigns })
    .from(participants)
    .innerJoin(rewards, eq(rewards.id, pr.rewardId))
    .innerJoin(campaigns, eq(campaigns.id, pr.campaignId))
    .where(eq(participants.id, pr.participantId));
  if (!found) return { participantReward: pr };
  const event: NewEvent = {
    campaignId: pr.campaignId,
    type: 'PARTICIPANT_REWARD_FULFILLED',
    data: {
      participant: serializeParticipant(found.participant, { now }),
      reward: serializeParticipantRewardWithReward(pr, found.reward),
      campaign: campaignRef(found.campaign),
    },
  };
  await recordEvents(ctx, [event]);
  return { participantReward: pr };
}

/** The campaign's reward `id`, or 404 (another campaign's reward is not found here either). */
async function campaignReward(ctx: Ctx, campaignId: string, id: string): Promise<ParticipantRewardRow> {
  const [pr] = await ctx.db
    .select()
    .from(participantRewards)
    .where(and(eq(participantRewards.id, id), eq(participantRewards.campaignId, campaignId)));
  if (!pr) throw notFound(`Reward ${id} in campaign ${campaignId}`);
  return pr;
}

/**
 * The approval's write: reward `id`, if it is not approved yet, read by primary key (`notApprovedByKey`): with the
 * plain `approved = false` the planner may read every reward that waits through the console's waiting index
 * (waiting-plan test, which reads this statement's plan). Answers the approved row.
 */
export const approvalStatement = (db: Tx, id: string, at: Date) =>
  db
    .update(participantRewards)
    .set({ approved: true, approvedAt: at })
    .where(and(eq(participantRewards.id, id), notApprovedByKey(participantRewards.approved)))
    .returning();

/**
 * The removal's write: reward `id` of the campaign, if it is not approved yet, read by primary key as the
 * approval's is (`approvalStatement`). Answers what the removal records.
 */
export const removalStatement = (db: Tx, campaignId: string, id: string) =>
  db
    .delete(participantRewards)
    .where(
      and(
        eq(participantRewards.id, id),
        eq(participantRewards.campaignId, campaignId),
        notApprovedByKey(participantRewards.approved),
      ),
    )
    .returning({
      id: participantRewards.id,
      rewardId: participantRewards.rewardId,
      participantId: participantRewards.participantId,
    });

/**
 * Approves a reward waiting for manual approval, in one transaction: the reward (`approved`, `approvedAt`),
 * the participant's approved reward count, the campaign's `winnerCount` when it is the participant's first
 * approved reward, and `PARTICIPANT_REACHED_A_GOAL` (as the apply path writes it, so FULFILMENT endpoints get
 * it now). With `fulfill`, the reward is fulfilled in the same transaction too. Rows are locked as the apply
 * path locks them: the participant, then the campaign last. A reward already approved: 400 INVALID_STATE
 * (of two concurrent approvals, one wins).
 */
export async function approveParticipantReward(
  ctx: Ctx,
  campaign: CampaignRow,
  participantRewardId: string,
  opts: { fulfill?: boolean } = {},
): Promise<ParticipantRewardChange> {
  return unitOfWork(ctx, async (tx) => {
    const { db } = tx;
    const now = ctx.clock.now();
    const found = await campaignReward(tx, campaign.id, participantRewardId);
    if (found.approved) throw alreadyApproved(participantRewardId);
    await db
      .select({ id: participants.id })
      .from(participants)
      .where(eq(participants.id, found.participantId))
      .for('update');
    const [approved] = await approvalStatement(db, found.id, now);
    if (!approved) {
      // Approved (or removed: 404) since it was read; the participant's lock made this request wait for that.
      await campaignReward(tx, campaign.id, participantRewardId);
      throw alreadyApproved(participantRewardId);
    }
    const [participant] = await db
      .update(participants)
      .set({ approvedRewardCount: sql`${participants.approvedRewardCount} + 1`, updatedAt: now })
      .where(eq(participants.id, approved.participantId))
      .returning();
    const [reward] = await db.select().from(rewards).where(eq(rewards.id, approved.rewardId));
    const [current] = await db.select().from(campaigns).where(eq(campaigns.id, campaign.id));
    if (!participant || !reward || !current) throw stateChanged(participantRewardId);
    await recordEvents(tx, [
      {
        campaignId: campaign.id,
        type: 'PARTICIPANT_REACHED_A_GOAL',
        data: {
          participant: serializeParticipant(participant, { now }),
          reward: serializeParticipantRewardWithReward(approved, reward),
          campaign: campaignRef(current),
        },
      },
    ]);
    let shown = approved;
    if (opts.fulfill) {
      const fulfilled = await fulfilParticipantReward(tx, approved.id, now);
      if (!fulfilled) throw stateChanged(participantRewardId);
      shown = fulfilled.participantReward;
    }
    // The campaign row is shared by every writer of the campaign: its counter moves last, before commit.
    if (participant.approvedRewardCount === 1) {
      await db
        .update(campaigns)
        .set({ winnerCount: sql`${campaigns.winnerCount} + 1` })
        .where(eq(campaigns.id, campaign.id));
    }
    return { participantReward: serializeParticipantReward(shown) };
  });
}

/**
 * Fulfils an approved reward of the campaign (`fulfilParticipantReward`, in a transaction of its own). Not
 * approved yet, or already fulfilled: 400 INVALID_STATE.
 */
export async function fulfilCampaignReward(
  ctx: Ctx,
  campaign: CampaignRow,
  participantRewardId: string,
): Promise<ParticipantRewardChange> {
  return unitOfWork(ctx, async (tx) => {
    await campaignReward(tx, campaign.id, participantRewardId);
    const fulfilled = await fulfilParticipantReward(tx, participantRewardId, ctx.clock.now());
    if (!fulfilled) {
      const pr = await campaignReward(tx, campaign.id, participantRewardId);
      throw invalidState(
        pr.isFulfilled
          ? `Reward ${participantRewardId} is already fulfilled`
          : `Reward ${participantRewardId} is not approved yet: approve it first (approve with fulfill does both)`,
      );
    }
    return { participantReward: serializeParticipantReward(fulfilled.participantReward) };
  });
}

/**
 * Removes an earned reward that is not approved yet (it no longer counts against the reward's limits), takes
 * it off its participant's `rewardCount`, and records `PARTICIPANT_REWARD_DELETED` (ids only), whose id is
 * handed to the dispatcher once this has committed (`ctx.afterCommit`). An approved one
 * stays: 400 INVALID_STATE. The participant's row is locked before the reward's, the order approval takes them
 * in, so that the two never wait on each other. The participant stays too, so nothing of the person is erased
 * here: erasure is deleting the participant (`deleteParticipant`).
 */
export async function removeParticipantReward(
  ctx: Ctx,
  campaign: CampaignRow,
  participantRewardId: string,
): Promise<{ success: true }> {
  return unitOfWork(ctx, async (tx) => {
    const found = await campaignReward(tx, campaign.id, participantRewardId);
    await tx.db
      .select({ id: participants.id })
      .from(participants)
      .where(eq(participants.id, found.participantId))
      .for('update');
    const [removed] = await removalStatement(tx.db, campaign.id, participantRewardId);
    if (!removed) {
      await campaignReward(tx, campaign.id, participantRewardId);
      throw invalidState(
        `Reward ${participantRewardId} is approved: only a reward not yet approved can be removed`,
      );
    }
    await tx.db
      .update(participants)
      .set({ rewardCount: sql`${participants.rewardCount} - 1` })
      .where(eq(participants.id, removed.participantId));
    await recordEvents(tx, [
      {
        campaignId: campaign.id,
        type: 'PARTICIPANT_REWARD_DELETED',
        data: {
          participantRewardId: removed.id,
          rewardId: removed.rewardId,
          participantId: removed.participantId,
          campaign: campaignRef(campaign),
        },
      },
    ]);
    return { success: true as const };
  });
}

const alreadyApproved = (id: string) => invalidState(`Reward ${id} is already approved`);

/** A row the transaction holds is gone: only the removal of the participant or reward while it ran does that. */
const stateChanged = (id: string) => notFound(`Reward ${id} (removed while this request ran)`);
