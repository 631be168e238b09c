import { Socket } from 'node:net';
import {
  type AppliedAction,
  acceptLoyaltyAction,
  applyActions,
  type CampaignRow,
  type Ctx,
  EARLIER_ACTIONS_MAX,
  manualClock,
  monthKey,
  newActionId,
  newId,
  type ParticipantRow,
  serializeParticipant,
  serializeParticipantReward,
  systemClock,
} from '@stampcard/core';
import { campaigns, createDb, events, loyaltyActions, participantRewards, participants } from '@stampcard/db';
import { and, asc, eq, sql } from 'drizzle-orm';
import { describe, expect, it, vi } from 'vitest';
import { makeReward, makeWorld, uniqueEmail } from '../../../test/support/factories';
import { useTestDb } from '../../../test/support/use';

const db = useTestDb();

const systemCtx = (): Ctx => ({ db: db.db, clock: systemClock });
/** A context whose clock the test moves (month boundaries). */
function clockCtx(start: string) {
  const clock = manualClock(start);
  return { ctx: { db: db.db, clock } satisfies Ctx, clock };
}

type WorldOpts = Parameters<typeof makeWorld>[1];

/** A fresh account, campaign and reward, with the campaign as its database row (what accept takes). */
async function world(ctx: Ctx, opts: WorldOpts = {}) {
  const w = await makeWorld(ctx, opts);
  return { ...w, campaignRow: await campaignRow(w.campaign.id) };
}

async function campaignRow(id: string): Promise<CampaignRow> {
  const [row] = await db.db.select().from(campaigns).where(eq(campaigns.id, id));
  return row!;
}

async function participantRow(id: string): Promise<ParticipantRow> {
  const [row] = await db.db.select().from(participants).where(eq(participants.id, id));
  return row!;
}

async function accept(ctx: Ctx, campaign: CampaignRow, rewardId: string, email: string) {
  return acceptLoyaltyAction(ctx, campaign, {
    rewardId,
    participant: { email, addIfNoneExists: true, profile: {} },
  });
}

/** Accepts and applies `n` actions one after the other; answers each apply's result. */
async function perform(ctx: Ctx, campaign: CampaignRow, rewardId: string, email: string, n = 1) {
  const out: AppliedAction[] = [];
  for (let i = 0; i < n; i++) {
    const { action } = await accept(ctx, campaign, rewardId, email);
    const [res] = await applyActions(ctx, [action.id]);
    out.push(res!);
  }
  return out;
}

const unlockedAt = (results: AppliedAction[]) =>
  results.flatMap((r, i) => (r.unlockedRewardIds.length > 0 ? [i + 1] : []));

async function earned(participantId: string, rewardId?: string) {
  return db.db
    .select()
    .from(participantRewards)
    .where(
      and(
        eq(participantRewards.participantId, participantId),
        rewardId ? eq(participantRewards.rewardId, rewardId) : undefined,
      ),
    )
    .orderBy(asc(participantRewards.createdAt), asc(participantRewards.id));
}

async function participantByEmail(campaignId: string, email: string) {
  const [row] = await db.db
    .select()
    .from(participants)
    .where(and(eq(participants.campaignId, campaignId), eq(participants.email, email)));
  return row!;
}

async function eventsOf(campaignId: string) {
  return db.db.select().from(events).where(eq(events.campaignId, campaignId)).orderBy(asc(events.seq));
}

describe('unlock rule', () => {
  it('earns the reward at each multiple of conversionsRequired (unlimited)', async () => {
    const ctx = systemCtx();
    const w = await world(ctx, { reward: { conversionsRequired: 3, isUnlimited: true } });
    const email = uniqueEmail();
    const results = await perform(ctx, w.campaignRow, w.reward.id, email, 7);

    expect(results.every((r) => r.status === 'APPLIED')).toBe(true);
    expect(unlockedAt(results)).toEqual([3, 6]);
    const p = await participantByEmail(w.campaign.id, email);
    expect(p.loyaltyActionCountsPerReward).toEqual({ [w.reward.id]: 7 });
    const rows = await earned(p.id);
    expect(rows.map((r) => r.id)).toEqual(results.flatMap((r) => r.unlockedRewardIds));
  });

  it('stops at `limit` earnings in total, still counting every action, also in a later month', async () => {
    const { ctx, clock } = clockCtx('2024-05-10T12:00:00Z');
    const w = await world(ctx, { reward: { conversionsRequired: 1, limit: 2 } });
    const email = uniqueEmail();
    const results = await perform(ctx, w.campaignRow, w.reward.id, email, 5);

    expect(unlockedAt(results)).toEqual([1, 2]);
    expect(results.map((r) => r.status)).toEqual(Array(5).fill('APPLIED'));
    const p = await participantByEmail(w.campaign.id, email);
    expect(p.loyaltyActionCount).toBe(5);
    expect(p.loyaltyActionCountsPerReward).toEqual({ [w.reward.id]: 5 });
    expect((await campaignRow(w.campaign.id)).loyaltyActionCount).toBe(5);

    // An IN_TOTAL limit does not restart with the month.
    clock.set('2024-06-02T00:00:00Z');
    const [later] = await perform(ctx, w.campaignRow, w.reward.id, email);
    expect(later!.unlockedRewardIds).toEqual([]);
    expect(await earned(p.id)).toHaveLength(2);
    expect((await participantRow(p.id)).loyaltyActionCount).toBe(6);
  });

  it('PER_MONTH: the goal counts the month only, and the limit is per UTC calendar month', async () => {
    const { ctx, clock } = clockCtx('2024-01-20T10:00:00Z');
    const w = await world(ctx, {
      reward: { conversionsRequired: 2, limit: 1, limitDuration: 'PER_MONTH' },
    });
    const email = uniqueEmail();
    const jan = await perform(ctx, w.campaignRow, w.reward.id, email, 4);
    clock.set('2024-01-31T23:59:59.999Z');
    jan.push(...(await perform(ctx, w.campaignRow, w.reward.id, email)));
    // Goal at 2 earns; goal at 4 is refused by the monthly limit; 5 is no goal.
    expect(unlockedAt(jan)).toEqual([2]);

    clock.set('2024-02-01T00:00:00.000Z');
    const feb = await perform(ctx, w.campaignRow, w.reward.id, email, 2);
    // The first February action makes the all-time count 6 (a multiple of 2) but the month's count 1.
    expect(unlockedAt(feb)).toEqual([2]);

    const p = await participantByEmail(w.campaign.id, email);
    expect(p).toMatchObject({
      loyaltyActionCount: 7,
      countsMonth: '2024-02',
      monthlyLoyaltyActionCount: 2,
      prevMonthlyLoyaltyActionCount: 5,
      loyaltyActionCountsPerReward: { [w.reward.id]: 7 },
      monthlyLoyaltyActionCountsPerReward: { [w.reward.id]: 2 },
    });
    expect((await earned(p.id)).map((r) => r.earnedMonth)).toEqual(['2024-01', '2024-02']);
  });

  it('PER_MONTH numberOfWinners caps distinct winners a month; a winner may earn again up to its limit', async () => {
    const { ctx, clock } = clockCtx('2024-03-05T08:00:00Z');
    const w = await world(ctx, {
      reward: { conversionsRequired: 1, limit: 2, limitDuration: 'PER_MONTH', numberOfWinners: 2 },
    });
    const [a, b, c] = [uniqueEmail('a'), uniqueEmail('b'), uniqueEmail('c')];
    const r = w.reward.id;
    expect(unlockedAt(await perform(ctx, w.campaignRow, r, a))).toEqual([1]);
    expect(unlockedAt(await perform(ctx, w.campaignRow, r, b))).toEqual([1]);
    // Third distinct participant: the cap refuses, the action still counts.
    const [cMarch] = await perform(ctx, w.campaignRow, r, c);
    expect(cMarch).toMatchObject({ status: 'APPLIED', unlockedRewardIds: [] });
    const cp = await participantByEmail(w.campaign.id, c);
    expect(cp.monthlyLoyaltyActionCountsPerReward).toEqual({ [r]: 1 });
    // A, already a winner this month, earns its second (its limit), then no more.
    expect(unlockedAt(await perform(ctx, w.campaignRow, r, a, 2))).toEqual([1]);

    clock.set('2024-04-01T00:00:00Z');
    const [cApril] = await perform(ctx, w.campaignRow, r, c);
    expect(cApril!.unlockedRewardIds).toHaveLength(1);

    const ap = await participantByEmail(w.campaign.id, a);
    expect((await earned(ap.id)).map((x) => x.earnedMonth)).toEqual(['2024-03', '2024-03']);
    expect((await earned(cp.id)).map((x) => x.earnedMonth)).toEqual(['2024-04']);
    expect((await campaignRow(w.campaign.id)).winnerCount).toBe(3);
  });
});

describe('unlock rule within one batch', () => {
  /** Accepts every (email) in order, then applies them all in ONE batch; answers the results in that order. */
  async function oneBatch(ctx: Ctx, campaign: CampaignRow, rewardId: string, emails: string[]) {
    const ids: string[] = [];
    for (const email of emails) ids.push((await accept(ctx, campaign, rewardId, email)).action.id);
    const results = await applyActions(ctx, ids);
    const byId = new Map(results.map((r) => [r.id, r]));
    return { ids, results: ids.map((id) => byId.get(id)!) };
  }

  it('a limit is reached inside the batch: later actions of the batch count but earn nothing', async () => {
    const ctx = systemCtx();
    const w = await world(ctx, { reward: { conversionsRequired: 1, limit: 2 } });
    const email = uniqueEmail();
    await perform(ctx, w.campaignRow, w.reward.id, email); // one earned before the batch
    const { ids, results } = await oneBatch(ctx, w.campaignRow, w.reward.id, [email, email, email]);
    expect(unlockedAt(results)).toEqual([1]);
    const p = await participantByEmail(w.campaign.id, email);
    expect(p.loyaltyActionCount).toBe(4);
    const rows = await earned(p.id, w.reward.id);
    expect(rows).toHaveLength(2);
    expect(rows[1]!.actionId).toBe(ids[0]);
    // The ledger names the reward on the action that earned it, and on no other.
    const ledger = await db.db
      .select({ id: loyaltyActions.id, unlocked: loyaltyActions.unlockedRewardIds })
      .from(loyaltyActions)
      .where(eq(loyaltyActions.participantId, p.id));
    const byId = new Map(ledger.map((l) => [l.id, l.unlocked]));
    expect(ids.map((id) => byId.get(id))).toEqual([[rows[1]!.id], [], []]);
  });

  it('the monthly winners cap is reached inside the batch: a winner may earn again, a new participant not', async () => {
    const ctx = systemCtx();
    const w = await world(ctx, {
      reward: { conversionsRequired: 1, limit: 2, limitDuration: 'PER_MONTH', numberOfWinners: 2 },
    });
    const [a, b, c, d] = ['a', 'b', 'c', 'd'].map((t) => uniqueEmail(t));
    await perform(ctx, w.campaignRow, w.reward.id, a!); // a is a winner before the batch
    const { results } = await oneBatch(ctx, w.campaignRow, w.reward.id, [c!, a!, b!, d!, a!, b!]);
    // c takes the second place; a earns its second; b and d find the cap reached; a is at its limit.
    expect(unlockedAt(results)).toEqual([1, 2]);
    expect((await campaignRow(w.campaign.id)).winnerCount).toBe(2);
    const all = await db.db
      .select()
      .from(participantRewards)
      .where(eq(participantRewards.rewardId, w.reward.id));
    expect(all).toHaveLength(3);
    const events = await eventsOf(w.campaign.id);
    expect(events.filter((e) => e.type === 'PARTICIPANT_REACHED_A_GOAL')).toHaveLength(3);
  });
});

describe('approval', () => {
  it('with requireRewardApproval the unlock waits: not approved, not available, no winner, no goal event', async () => {
    const ctx = systemCtx();
    const w = await world(ctx, {
      campaign: { requireRewardApproval: true },
      reward: { conversionsRequired: 1 },
    });
    const email = uniqueEmail();
    const [res] = await perform(ctx, w.campaignRow, w.reward.id, email);
    expect(res!.unlockedRewardIds).toHaveLength(1);

    const p = await participantByEmail(w.campaign.id, email);
    const [pr] = await earned(p.id);
    expect(serializeParticipantReward(pr!)).toMatchObject({
      id: res!.unlockedRewardIds[0],
      status: 'PENDING',
      approved: false,
      approvedAt: null,
      isAvailable: false,
    });
    expect(p.approvedRewardCount).toBe(0);
    expect(serializeParticipant(p, { now: new Date() }).isWinner).toBe(false);
    expect((await campaignRow(w.campaign.id)).winnerCount).toBe(0);
    const types = (await eventsOf(w.campaign.id)).map((e) => e.type);
    expect(types).toContain('LOYALTY_ACTION_APPLIED');
    expect(types).not.toContain('PARTICIPANT_REACHED_A_GOAL');
  });

  it('without it the reward is approved at once; winnerCount counts a participant once', async () => {
    const { ctx } = clockCtx('2024-07-07T07:07:07.000Z');
    const w = await world(ctx, { reward: { conversionsRequired: 1, isUnlimited: true } });
    const [a, b] = [uniqueEmail('a'), uniqueEmail('b')];

    await perform(ctx, w.campaignRow, w.reward.id, a);
    expect((await campaignRow(w.campaign.id)).winnerCount).toBe(1);
    await perform(ctx, w.campaignRow, w.reward.id, a);
    expect((await campaignRow(w.campaign.id)).winnerCount).toBe(1);
    await perform(ctx, w.campaignRow, w.reward.id, b);
    expect((await campaignRow(w.campaign.id)).winnerCount).toBe(2);

    const ap = await participantByEmail(w.campaign.id, a);
    expect(ap.approvedRewardCount).toBe(2);
    expect(serializeParticipant(ap, { now: ctx.clock.now() }).isWinner).toBe(true);
    const rows = await earned(ap.id);
    expect(rows.map(serializeParticipantReward)).toEqual([
      expect.objectContaining({
        approved: true,
        isAvailable: true,
        status: 'PENDING',
        approvedAt: Date.parse('2024-07-07T07:07:07.000Z'),
      }),
      expect.objectContaining({ approved: true, isAvailable: true, status: 'PENDING' }),
    ]);
  });
});

describe('counters', () => {
  it('counts total, monthly, per reward and monthly per reward, and the campaign total', async () => {
    const ctx = systemCtx();
    const w = await world(ctx, { reward: { conversionsRequired: 5 } });
    const r2 = await makeReward(ctx, w.campaign.id, { conversionsRequired: 5 });
    const [a, b] = [uniqueEmail('a'), uniqueEmail('b')];
    await perform(ctx, w.campaignRow, w.reward.id, a, 2);
    await perform(ctx, w.campaignRow, r2.id, a);
    await perform(ctx, w.campaignRow, r2.id, b);

    expect(await participantByEmail(w.campaign.id, a)).toMatchObject({
      loyaltyActionCount: 3,
      monthlyLoyaltyActionCount: 3,
      loyaltyActionCountsPerReward: { [w.reward.id]: 2, [r2.id]: 1 },
      monthlyLoyaltyActionCountsPerReward: { [w.reward.id]: 2, [r2.id]: 1 },
    });
    expect(await participantByEmail(w.campaign.id, b)).toMatchObject({
      loyaltyActionCount: 1,
      loyaltyActionCountsPerReward: { [r2.id]: 1 },
    });
    expect(await campaignRow(w.campaign.id)).toMatchObject({
      loyaltyActionCount: 4,
      participantCount: 2,
      winnerCount: 0,
    });
  });

  it('rolls the month: monthly shows 0, prev shows last month, the next action starts at 1', async () => {
    const { ctx, clock } = clockCtx('2024-05-30T22:00:00Z');
    const w = await world(ctx, { reward: { conversionsRequired: 10 } });
    const email = uniqueEmail();
    await perform(ctx, w.campaignRow, w.reward.id, email, 3);
    const p = await participantByEmail(w.campaign.id, email);

    clock.set('2024-06-01T00:00:00Z');
    const june = serializeParticipant(await participantRow(p.id), { now: clock.now() });
    expect(june).toMatchObject({
      loyaltyActionCount: 3,
      monthlyLoyaltyActionCount: 0,
      prevMonthlyLoyaltyActionCount: 3,
      prevLoyaltyActionCount: 3,
      loyaltyActionCountsPerReward: { [w.reward.id]: 3 },
    });
    expect(june.monthlyLoyaltyActionCountsPerReward).toBeUndefined();

    await perform(ctx, w.campaignRow, w.reward.id, email);
    const after = await participantRow(p.id);
    expect(after).toMatchObject({
      countsMonth: '2024-06',
      loyaltyActionCount: 4,
      monthlyLoyaltyActionCount: 1,
      prevMonthlyLoyaltyActionCount: 3,
      monthlyLoyaltyActionCountsPerReward: { [w.reward.id]: 1 },
    });

    // A skipped month: nothing carries over.
    clock.set('2024-08-01T00:00:00Z');
    expect(serializeParticipant(after, { now: clock.now() })).toMatchObject({
      monthlyLoyaltyActionCount: 0,
      prevMonthlyLoyaltyActionCount: 0,
    });
  });
});

describe('outbox', () => {
  it('records NEW_PARTICIPANT_ADDED, LOYALTY_ACTION_APPLIED per action and PARTICIPANT_REACHED_A_GOAL per unlock', async () => {
    const ctx = systemCtx();
    const w = await world(ctx, { reward: { conversionsRequired: 2, isUnlimited: true } });
    const email = uniqueEmail();
    const first = await accept(ctx, w.campaignRow, w.reward.id, email);
    expect(first.participantCreated).toBe(true);
    // The same participant again, by email and by id: not created again.
    const second = await accept(ctx, w.campaignRow, w.reward.id, email);
    expect(second.participantCreated).toBe(false);
    const third = await acceptLoyaltyAction(ctx, w.campaignRow, {
      rewardId: w.reward.id,
      participant: { id: first.action.participantId },
    });
    const applied = await applyActions(ctx, [first.action.id, second.action.id, third.action.id]);
    expect(applied.map((r) => r.id)).toEqual([first.action.id, second.action.id, third.action.id]);
    const unlockedId = applied[1]!.unlockedRewardIds[0];
    expect(unlockedId).toBeDefined();

    const evs = await eventsOf(w.campaign.id);
    expect(evs.map((e) => e.type)).toEqual([
      'NEW_PARTICIPANT_ADDED',
      'LOYALTY_ACTION_APPLIED',
      'LOYALTY_ACTION_APPLIED',
      'PARTICIPANT_REACHED_A_GOAL',
      'LOYALTY_ACTION_APPLIED',
    ]);
    expect(evs.every((e) => e.campaignId === w.campaign.id)).toBe(true);
    const [added, a1, a2, goal, a3] = evs.map((e) => e.data);
    expect(added).toMatchObject({
      participant: { id: first.action.participantId, email, loyaltyActionCount: 0 },
      campaign: { id: w.campaign.id },
    });
    expect(a1).toMatchObject({
      action: { id: first.action.id, status: 'APPLIED', rewardId: w.reward.id },
      participant: { id: first.action.participantId, loyaltyActionCount: 1 },
      campaign: { id: w.campaign.id },
    });
    expect(a1).not.toHaveProperty('unlockedRewards');
    expect(a2).toMatchObject({
      action: { id: second.action.id },
      participant: { loyaltyActionCount: 2 },
      unlockedRewards: [{ id: unlockedId, rewardId: w.reward.id, approved: true, limit: -1 }],
    });
    expect(goal).toMatchObject({
      participant: { id: first.action.participantId, isWinner: true, loyaltyActionCount: 2 },
      reward: { id: unlockedId, rewardId: w.reward.id, conversionsRequired: 2, isAvailable: true },
      campaign: { id: w.campaign.id, name: w.campaign.name },
    });
    expect(a3).toMatchObject({ action: { id: third.action.id }, participant: { loyaltyActionCount: 3 } });
  });
});

describe('exactly once', () => {
  it("applies a participant's earlier QUEUED actions first: the action that reaches the goal unlocks, whichever job comes first", async () => {
    const ctx = systemCtx();
    const w = await world(ctx, { reward: { conversionsRequired: 2, isUnlimited: true } });
    const [a, b] = [uniqueEmail('a'), uniqueEmail('b')];
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await accept(ctx, w.campaignRow, w.reward.id, a)).action.id);
    const other = (await accept(ctx, w.campaignRow, w.reward.id, b)).action;

    // The third action's job is taken first: it applies the two before it, in the order they were accepted.
    const results = await applyActions(ctx, [ids[2]!]);
    expect(results.map((r) => r.id)).toEqual(ids);
    expect(unlockedAt(results)).toEqual([2]);
    // Their own jobs come later and find nothing to do; another participant's action was left to its own.
    expect(await applyActions(ctx, [ids[0]!, ids[1]!])).toEqual([]);
    const [otherRow] = await db.db.select().from(loyaltyActions).where(eq(loyaltyActions.id, other.id));
    expect(otherRow!.status).toBe('QUEUED');
    expect((await participantByEmail(w.campaign.id, a)).loyaltyActionCount).toBe(3);
    const applied = (await eventsOf(w.campaign.id)).filter((e) => e.type === 'LOYALTY_ACTION_APPLIED');
    expect(applied.map((e) => (e.data as { action: { id: string } }).action.id)).toEqual(ids);
  });

  it(`takes on at most EARLIER_ACTIONS_MAX (${EARLIER_ACTIONS_MAX}) earlier actions: the oldest, and the rest in their own batches`, async () => {
    const ctx = systemCtx();
    const w = await world(ctx, { reward: { conversionsRequired: 5000, isUnlimited: true } });
    const { action: first } = await accept(ctx, w.campaignRow, w.reward.id, uniqueEmail());
    // A backlog of one participant: the first, then EARLIER_ACTIONS_MAX + 1 more, a millisecond apart.
    const backlog = Array.from({ length: EARLIER_ACTIONS_MAX + 1 }, (_, i) => ({
      id: newActionId(new Date(first.createdAt.getTime() + 1 + i)),
      campaignId: w.campaign.id,
      participantId: first.participantId,
      rewardId: w.reward.id,
      status: 'QUEUED' as const,
      createdAt: new Date(first.createdAt.getTime() + 1 + i),
    }));
    await db.db.insert(loyaltyActions).values(backlog);
    const ids = [first.id, ...backlog.map((a) => a.id)];
    const last = ids.at(-1)!;

    const results = await applyActions(ctx, [last]);
    // The oldest EARLIER_ACTIONS_MAX, then its own: the one just before it is left to its own job.
    expect(results.map((r) => r.id)).toEqual([...ids.slice(0, EARLIER_ACTIONS_MAX), last]);
    const [left] = await db.db
      .select()
      .from(loyaltyActions)
      .where(eq(loyaltyActions.id, ids.at(-2)!));
    expect(left!.status).toBe('QUEUED');
    expect(await applyActions(ctx, [ids.at(-2)!])).toHaveLength(1);
    expect((await participantRow(first.participantId)).loyaltyActionCount).toBe(ids.length);
  });

  it('two actions accepted in the same millisecond are applied in the order they were accepted', async () => {
    const { ctx } = clockCtx('2026-03-10T12:00:00.000Z');
    const w = await world(ctx, { reward: { conversionsRequired: 2, isUnlimited: true } });
    const email = uniqueEmail();
    // The clock does not move: both carry the same created_at, and only their ids tell them apart.
    for (let round = 0; round < 5; round++) {
      const first = (await accept(ctx, w.campaignRow, w.reward.id, email)).action;
      const second = (await accept(ctx, w.campaignRow, w.reward.id, email)).action;
      expect(second.createdAt).toEqual(first.createdAt);
      const results = await applyActions(ctx, [second.id, first.id]);
      expect(results.map((r) => r.id)).toEqual([first.id, second.id]);
      expect(unlockedAt(results)).toEqual([2]);
    }
  });

  it('a second apply of the same id changes nothing and answers []', async () => {
    const ctx = systemCtx();
    const w = await world(ctx, { reward: { conversionsRequired: 1 } });
    const { action } = await accept(ctx, w.campaignRow, w.reward.id, uniqueEmail());
    expect(await applyActions(ctx, [action.id])).toHaveLength(1);
    expect(await applyActions(ctx, [action.id])).toEqual([]);

    expect((await participantRow(action.participantId)).loyaltyActionCount).toBe(1);
    expect(await earned(action.participantId)).toHaveLength(1);
    expect((await campaignRow(w.campaign.id)).loyaltyActionCount).toBe(1);
    const applied = (await eventsOf(w.campaign.id)).filter((e) => e.type === 'LOYALTY_ACTION_APPLIED');
    expect(applied).toHaveLength(1);
  });

  it('the same id twice in one batch counts once', async () => {
    const ctx = systemCtx();
    const w = await world(ctx, { reward: { conversionsRequired: 2, isUnlimited: true } });
    const { action } = await accept(ctx, w.campaignRow, w.reward.id, uniqueEmail());
    const res = await applyActions(ctx, [action.id, action.id]);
    expect(res).toEqual([
      {
        id: action.id,
        status: 'APPLIED',
        unlockedRewardIds: [],
        createdAt: action.createdAt,
        eventIds: [expect.stringMatching(/^evt_/)],
      },
    ]);
    expect((await participantRow(action.participantId)).loyaltyActionCountsPerReward).toEqual({
      [w.reward.id]: 1,
    });
    expect((await campaignRow(w.campaign.id)).loyaltyActionCount).toBe(1);
  });

  it('concurrent batches with overlapping ids apply each action once and never over-award', async () => {
    const ctx = systemCtx();
    const w = await world(ctx, { reward: { conversionsRequired: 1, limit: 2 } });
    const [a, b] = [uniqueEmail('a'), uniqueEmail('b')];
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      ids.push((await accept(ctx, w.campaignRow, w.reward.id, a)).action.id);
      ids.push((await accept(ctx, w.campaignRow, w.reward.id, b)).action.id);
    }
    const batches = [ids.slice(0, 6), ids.slice(3, 10), [...ids].reverse().slice(0, 5)];
    const results = (await Promise.all(batches.map((batch) => applyActions(ctx, batch)))).flat();

    expect(results.map((r) => r.id).sort()).toEqual([...ids].sort());
    expect(results.every((r) => r.status === 'APPLIED')).toBe(true);
    for (const email of [a, b]) {
      const p = await participantByEmail(w.campaign.id, email);
      expect(p.loyaltyActionCount).toBe(5);
      expect(await earned(p.id)).toHaveLength(2);
    }
    expect(await campaignRow(w.campaign.id)).toMatchObject({ loyaltyActionCount: 10, winnerCount: 2 });
    const applied = (await eventsOf(w.campaign.id)).filter((e) => e.type === 'LOYALTY_ACTION_APPLIED');
    expect(applied).toHaveLength(10);
  });

  it('concurrent single-action batches for one participant count every action and never over-award', async () => {
    const ctx = systemCtx();
    const w = await world(ctx, { reward: { conversionsRequired: 2, limit: 2 } });
    const email = uniqueEmail();
    const ids: string[] = [];
    for (let i = 0; i < 8; i++) ids.push((await accept(ctx, w.campaignRow, w.reward.id, email)).action.id);
    const results = (await Promise.all(ids.map((id) => applyActions(ctx, [id])))).flat();

    expect(results).toHaveLength(8);
    expect(results.filter((r) => r.unlockedRewardIds.length > 0)).toHaveLength(2);
    const p = await participantByEmail(w.campaign.id, email);
    expect(p).toMatchObject({ loyaltyActionCount: 8, loyaltyActionCountsPerReward: { [w.reward.id]: 8 } });
    expect(await earned(p.id)).toHaveLength(2);
    expect(await campaignRow(w.campaign.id)).toMatchObject({ loyaltyActionCount: 8, winnerCount: 1 });
  });

  it("reads a participant's earnings behind its lock: a reward another writer recorded while holding it counts", async () => {
    const ctx = systemCtx();
    const w = await world(ctx, { reward: { conversionsRequired: 1, limit: 1 } });
    const email = uniqueEmail();
    const { action } = await accept(ctx, w.campaignRow, w.reward.id, email);
    const p = await participantByEmail(w.campaign.id, email);
    // Another writer holds the participant's row and records the reward (limit 1), not committed yet.
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    let recorded!: () => void;
    const isRecorded = new Promise<void>((resolve) => {
      recorded = resolve;
    });
    const holder = db.db.transaction(async (tx) => {
      await tx
        .select({ id: participants.id })
        .from(participants)
        .where(eq(participants.id, p.id))
        .for('update');
      await tx.insert(participantRewards).values({
        id: newId('participantReward'),
        campaignId: w.campaign.id,
        participantId: p.id,
        rewardId: w.reward.id,
        earnedMonth: monthKey(new Date()),
        createdAt: new Date(),
      });
      recorded();
      await released;
    });
    await isRecorded;
    const applying = applyActions(ctx, [action.id]);
    // The batch has claimed its action and waits for the participant's row.
    await vi.waitFor(
      async () => {
        const rows = await db.db.execute<{ n: number }>(sql`
          select count(*)::int as n from pg_stat_activity
          where datname = current_database() and wait_event_type = 'Lock' and query ilike '%from "participants"%'`);
        expect(rows[0]!.n).toBe(1);
      },
      { timeout: 10_000, interval: 20 },
    );
    release();
    await holder;
    const [result] = await applying;
    expect(result).toMatchObject({ status: 'APPLIED', unlockedRewardIds: [] });
    expect(await earned(p.id)).toHaveLength(1);
  });

  it('sends a batch that unlocks a reward to PostgreSQL in six round trips, its statements prepared', async () => {
    const ctx = systemCtx();
    const w = await world(ctx, { reward: { conversionsRequired: 1, limit: 10 } });
    const emails = [uniqueEmail('a'), uniqueEmail('b'), uniqueEmail('c')];
    const accepted = async () =>
      Promise.all(
        emails.map(async (email) => (await accept(ctx, w.campaignRow, w.reward.id, email)).action.id),
      );
    // A pool of one connection, so that the measured batch finds every statement prepared by the first.
    const own = createDb(db.url, { max: 1 });
    // What crosses the socket, in order: a write or a read (vitest numbers every call of every spy). A round
    // trip is a run of writes sent without reading in between (postgres.js writes a statement of 1 KB or more
    // at once, on its own, so a run can be several writes).
    const write = vi.spyOn(Socket.prototype, 'write');
    const push = vi.spyOn(Socket.prototype, 'push');
    try {
      const ownCtx: Ctx = { db: own.db, clock: systemClock };
      await applyActions(ownCtx, await accepted());
      const ids = await accepted();
      write.mockClear();
      push.mockClear();
      const results = await applyActions(ownCtx, ids);
      const trace = [
        ...write.mock.invocationCallOrder.map((n) => [n, 'W'] as const),
        ...push.mock.invocationCallOrder.map((n) => [n, 'R'] as const),
      ]
        .sort(([a], [b]) => a - b)
        .map(([, what]) => what)
        .join('');
      const roundTrips = trace.match(/W+/g) ?? [];
      // BEGIN; the earlier actions; their claim; the participants' lock with the rewards, campaigns and
      // earnings; the new rewards, events, participants, buckets and counters; COMMIT.
      expect(roundTrips).toHaveLength(6);
      expect(results.every((r) => r.unlockedRewardIds.length === 1)).toBe(true);
    } finally {
      write.mockRestore();
      push.mockRestore();
      await own.close();
    }
  });

  it('concurrent batches respect the monthly winners cap', async () => {
    const ctx = systemCtx();
    const w = await world(ctx, {
      reward: { conversionsRequired: 1, limit: 1, limitDuration: 'PER_MONTH', numberOfWinners: 1 },
    });
    const ids: string[] = [];
    for (let i = 0; i < 4; i++)
      ids.push((await accept(ctx, w.campaignRow, w.reward.id, uniqueEmail())).action.id);
    const results = (await Promise.all(ids.map((id) => applyActions(ctx, [id])))).flat();

    expect(results).toHaveLength(4);
    expect(results.filter((r) => r.unlockedRewardIds.length > 0)).toHaveLength(1);
    const rows = await db.db
      .select()
      .from(participantRewards)
      .where(eq(participantRewards.rewardId, w.reward.id));
    expect(rows).toHaveLength(1);
    expect(await campaignRow(w.campaign.id)).toMatchObject({ loyaltyActionCount: 4, winnerCount: 1 });
  });

  it('rejects an action whose participant was deleted, with a reason, and applies the rest of its batch', async () => {
    const ctx = systemCtx();
    const w = await world(ctx, { reward: { conversionsRequired: 1, isUnlimited: true } });
    const gone = await accept(ctx, w.campaignRow, w.reward.id, uniqueEmail('gone'));
    const kept = await accept(ctx, w.campaignRow, w.reward.id, uniqueEmail('kept'));
    await db.db.delete(participants).where(eq(participants.id, gone.action.participantId));

    const res = await applyActions(ctx, [gone.action.id, kept.action.id]);
    expect(res).toEqual([
      {
        id: gone.action.id,
        status: 'REJECTED',
        unlockedRewardIds: [],
        reason: 'PARTICIPANT_NOT_FOUND',
        createdAt: gone.action.createdAt,
      },
      {
        id: kept.action.id,
        status: 'APPLIED',
        unlockedRewardIds: [expect.any(String)],
        createdAt: kept.action.createdAt,
        eventIds: expect.arrayContaining([expect.stringMatching(/^evt_/)]),
      },
    ]);
    const [row] = await db.db.select().from(loyaltyActions).where(eq(loyaltyActions.id, gone.action.id));
    expect(row).toMatchObject({ status: 'REJECTED', reason: 'PARTICIPANT_NOT_FOUND', unlockedRewardIds: [] });
    expect((await campaignRow(w.campaign.id)).loyaltyActionCount).toBe(1);
    const applied = (await eventsOf(w.campaign.id)).filter((e) => e.type === 'LOYALTY_ACTION_APPLIED');
    expect(applied.map((e) => (e.data as { action: { id: string } }).action.id)).toEqual([kept.action.id]);
    // Rejected is final: applying it again does nothing.
    expect(await applyActions(ctx, [gone.action.id])).toEqual([]);
  });
});
