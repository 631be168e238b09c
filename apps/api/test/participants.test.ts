import { ensureParticipant } from '@stampcard/core';
import { campaigns } from '@stampcard/db';
import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { client, expectErrorShape, inProcess } from '../../../test/support/client';
import { makeCampaign, makeReward, makeWorld, uniqueEmail } from '../../../test/support/factories';
import { useTestStack } from '../../../test/support/use';

const stack = useTestStack();

type World = Awaited<ReturnType<typeof makeWorld>>;

const api = (key: string) => client(inProcess(stack.app), key);

/** Triggers one loyalty action and waits until the worker has applied it. */
async function act(w: World, email: string, extra: Record<string, unknown> = {}, rewardId = w.reward.id) {
  const r = await api(w.key).post(`/v1/campaign/${w.campaign.id}/loyalty-action?wait=true`, {
    participantEmail: email,
    rewardId,
    ...extra,
  });
  expect(r.status).toBe(200);
  expect(r.body.action.status).toBe('APPLIED');
  return r.body.action as { id: string; participantId: string; unlockedRewards: { id: string }[] };
}

/** A participant with no loyalty action, added the way the API adds one (core `ensureParticipant`). */
async function addWithoutActions(w: World, email: string) {
  const [row] = await stack.ctx.db.select().from(campaigns).where(eq(campaigns.id, w.campaign.id));
  const { participant } = await ensureParticipant(stack.ctx, row!, { email }, 'DIRECT');
  return participant;
}

const getParticipant = (w: World, idOrEmail: string, campaignId = w.campaign.id) =>
  api(w.key).get(`/v1/campaign/${campaignId}/participant/${idOrEmail}`);

describe('GET /v1/campaign/{id}/participant/{email | id}', () => {
  it('finds the same participant by email (any case, @ encoded or not) and by id', async () => {
    const w = await makeWorld(stack.ctx);
    const email = uniqueEmail('Ada.Lovelace').toLowerCase();
    const { participantId } = await act(w, email);

    const byEmail = await getParticipant(w, encodeURIComponent(email));
    expect(byEmail.status).toBe(200);
    expect(byEmail.body.id).toBe(participantId);
    expect(byEmail.body.email).toBe(email);

    const byId = await getParticipant(w, participantId);
    expect(byId.status).toBe(200);
    expect(byId.body).toEqual(byEmail.body);

    for (const variant of [
      encodeURIComponent(email.toUpperCase()),
      encodeURIComponent(email.replace(/^a/, 'A')),
      email.replace('@', '%40'),
      email, // a bare @ in the path
    ]) {
      const r = await getParticipant(w, variant);
      expect(r.status, variant).toBe(200);
      expect(r.body).toEqual(byEmail.body);
    }
  });

  it('stores an email given in mixed case in lower case, and finds it with a plus tag intact', async () => {
    const w = await makeWorld(stack.ctx);
    const email = `Grace+Loyalty-${Date.now()}@Example.COM`;
    await act(w, email);
    const r = await getParticipant(w, encodeURIComponent(email));
    expect(r.status).toBe(200);
    expect(r.body.email).toBe(email.toLowerCase());
    // Without the tag it is another address.
    expectErrorShape(
      await getParticipant(w, encodeURIComponent(email.replace(/\+[^@]+/, ''))),
      404,
      'NOT_FOUND',
    );
  });

  it('answers 404 NOT_FOUND for an unknown email or id', async () => {
    const w = await makeWorld(stack.ctx);
    const { participantId } = await act(w, uniqueEmail());
    const byEmail = expectErrorShape(
      await getParticipant(w, encodeURIComponent(uniqueEmail('nobody'))),
      404,
      'NOT_FOUND',
    );
    expect(byEmail.name).toBe('NotFound');
    expectErrorShape(await getParticipant(w, `${participantId}x`), 404, 'NOT_FOUND');
    expectErrorShape(await getParticipant(w, 'doesnotexist'), 404, 'NOT_FOUND');
  });

  it('answers 404 for a participant of another campaign of the same account', async () => {
    const w = await makeWorld(stack.ctx);
    const email = uniqueEmail('elsewhere');
    const { participantId } = await act(w, email);
    const sibling = await makeCampaign(stack.ctx, w.account.id);
    expectErrorShape(await getParticipant(w, encodeURIComponent(email), sibling.id), 404, 'NOT_FOUND');
    expectErrorShape(await getParticipant(w, participantId, sibling.id), 404, 'NOT_FOUND');
  });
});

describe('the Participant object', () => {
  it('carries the seed fields for a participant added by a loyalty action', async () => {
    const w = await makeWorld(stack.ctx, { reward: { conversionsRequired: 3 } });
    const email = uniqueEmail('fields');
    const before = Date.now();
    const { participantId } = await act(w, email, {
      firstName: 'Ada',
      lastName: 'Lovelace',
      metadata: { plan: 'pro', seats: 3, trial: false, ref: null },
    });
    const after = Date.now();
    await act(w, email);

    const r = await getParticipant(w, encodeURIComponent(email));
    expect(r.status).toBe(200);
    const p = r.body;
    expect(p).toMatchObject({
      id: participantId,
      firstName: 'Ada',
      lastName: 'Lovelace',
      email,
      loyaltyActionCount: 2,
      monthlyLoyaltyActionCount: 2,
      prevMonthlyLoyaltyActionCount: 0,
      prevLoyaltyActionCount: 0,
      fraudRiskLevel: 'LOW',
      fraudReasonCode: 'UNIQUE_IDENTITY',
      isWinner: false,
      loyaltyActionSource: 'DIRECT',
      metadata: { plan: 'pro', seats: 3, trial: false, ref: null },
      loyaltyActionCountsPerReward: { [w.reward.id]: 2 },
      loyaltyActionCountPerReward: { [w.reward.id]: 2 },
      monthlyLoyaltyActionCountsPerReward: { [w.reward.id]: 2 },
      monthlyLoyaltyActionCountPerReward: { [w.reward.id]: 2 },
      rewards: [],
      rank: 1,
      monthlyRank: 1,
    });
    expect(typeof p.id).toBe('string');
    expect(p.id).not.toContain('@');
    expect(Number.isInteger(p.createdAt)).toBe(true);
    expect(p.createdAt).toBeGreaterThanOrEqual(before);
    expect(p.createdAt).toBeLessThanOrEqual(after);
    // Joined this month: there is no previous month to rank in.
    expect(p).not.toHaveProperty('prevMonthlyRank');
  });

  it('counts per reward separately', async () => {
    const w = await makeWorld(stack.ctx, { reward: { conversionsRequired: 5 } });
    const other = await makeReward(stack.ctx, w.campaign.id, { conversionsRequired: 5 });
    const email = uniqueEmail('split');
    await act(w, email);
    await act(w, email);
    await act(w, email, {}, other.id);
    const r = await getParticipant(w, encodeURIComponent(email));
    expect(r.body.loyaltyActionCount).toBe(3);
    expect(r.body.loyaltyActionCountsPerReward).toEqual({ [w.reward.id]: 2, [other.id]: 1 });
    expect(r.body.monthlyLoyaltyActionCountsPerReward).toEqual({ [w.reward.id]: 2, [other.id]: 1 });
  });

  it('leaves the per-reward maps out (not {}) while the participant has no loyalty action', async () => {
    const w = await makeWorld(stack.ctx);
    const email = uniqueEmail('idle');
    const created = await addWithoutActions(w, email);
    const r = await getParticipant(w, encodeURIComponent(email));
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      id: created.id,
      email,
      loyaltyActionCount: 0,
      monthlyLoyaltyActionCount: 0,
      isWinner: false,
      rewards: [],
      rank: 1,
      monthlyRank: 0,
      fraudRiskLevel: 'LOW',
      fraudReasonCode: 'UNIQUE_IDENTITY',
      loyaltyActionSource: 'DIRECT',
    });
    for (const key of [
      'loyaltyActionCountsPerReward',
      'loyaltyActionCountPerReward',
      'monthlyLoyaltyActionCountsPerReward',
      'monthlyLoyaltyActionCountPerReward',
    ]) {
      expect(r.body).not.toHaveProperty(key);
    }
  });

  it('lists earned rewards with participantId, and marks the participant a winner', async () => {
    const w = await makeWorld(stack.ctx, { reward: { conversionsRequired: 2 } });
    const email = uniqueEmail('winner');
    await act(w, email);
    const before = await getParticipant(w, encodeURIComponent(email));
    expect(before.body).toMatchObject({ isWinner: false, rewards: [] });

    const second = await act(w, email);
    expect(second.unlockedRewards).toHaveLength(1);
    const r = await getParticipant(w, encodeURIComponent(email));
    expect(r.body.isWinner).toBe(true);
    expect(r.body.rewards).toHaveLength(1);
    const [earned] = r.body.rewards;
    expect(earned).toMatchObject({
      id: second.unlockedRewards[0]!.id,
      rewardId: w.reward.id,
      participantId: r.body.id,
      status: 'PENDING',
      approved: true,
      isAvailable: true,
      isFulfilled: false,
      fulfilledAt: null,
    });
    expect(earned.id).toMatch(/^prew_/);
    expect(Number.isInteger(earned.approvedAt)).toBe(true);
    expect(typeof earned.unread).toBe('boolean');
  });

  it('holds an unapproved reward without making the participant a winner', async () => {
    const w = await makeWorld(stack.ctx, { campaign: { requireRewardApproval: true } });
    const email = uniqueEmail('pending');
    await act(w, email);
    const r = await getParticipant(w, encodeURIComponent(email));
    expect(r.body.isWinner).toBe(false);
    expect(r.body.rewards).toHaveLength(1);
    expect(r.body.rewards[0]).toMatchObject({
      approved: false,
      approvedAt: null,
      isAvailable: false,
      participantId: r.body.id,
    });
  });
});

describe('ranks', () => {
  it('are 1-based, by count descending, ties broken by earlier join; monthlyRank 0 without actions', async () => {
    const w = await makeWorld(stack.ctx, { reward: { isUnlimited: true, conversionsRequired: 10 } });
    const early = uniqueEmail('early'); // joins first, 1 action
    const top = uniqueEmail('top'); // 3 actions
    const late = uniqueEmail('late'); // joins after `early`, 1 action
    const idle = uniqueEmail('idle'); // joins last, no action

    await act(w, early);
    await act(w, top);
    await act(w, late);
    await act(w, top);
    await act(w, top);
    await addWithoutActions(w, idle);

    const ranks: Record<string, { rank: number; monthlyRank: number; loyaltyActionCount: number }> = {};
    for (const email of [early, top, late, idle]) {
      const r = await getParticipant(w, encodeURIComponent(email));
      expect(r.status).toBe(200);
      ranks[email] = r.body;
    }
    expect(ranks[top]).toMatchObject({ loyaltyActionCount: 3, rank: 1, monthlyRank: 1 });
    expect(ranks[early]).toMatchObject({ loyaltyActionCount: 1, rank: 2, monthlyRank: 2 });
    expect(ranks[late]).toMatchObject({ loyaltyActionCount: 1, rank: 3, monthlyRank: 3 });
    expect(ranks[idle]).toMatchObject({ loyaltyActionCount: 0, rank: 4, monthlyRank: 0 });

    // One more action for `late` moves it past `early`.
    await act(w, late);
    const moved = await getParticipant(w, encodeURIComponent(late));
    expect(moved.body).toMatchObject({ loyaltyActionCount: 2, rank: 2, monthlyRank: 2 });
    const pushed = await getParticipant(w, encodeURIComponent(early));
    expect(pushed.body).toMatchObject({ rank: 3, monthlyRank: 3 });
    const still = await getParticipant(w, encodeURIComponent(top));
    expect(still.body).toMatchObject({ rank: 1, monthlyRank: 1 });
  });

  it('break ties by join order, whatever the participant ids', async () => {
    const w = await makeWorld(stack.ctx, { reward: { isUnlimited: true, conversionsRequired: 10 } });
    const emails = [1, 2, 3, 4, 5].map((i) => uniqueEmail(`tie${i}`));
    for (const email of emails) await act(w, email);
    const seen = [];
    for (const email of emails) {
      const r = await getParticipant(w, encodeURIComponent(email));
      seen.push([r.body.rank, r.body.monthlyRank]);
    }
    expect(seen).toEqual([
      [1, 1],
      [2, 2],
      [3, 3],
      [4, 4],
      [5, 5],
    ]);
  });

  it('are counted within the campaign only', async () => {
    const w = await makeWorld(stack.ctx, { reward: { isUnlimited: true } });
    const sibling = await makeCampaign(stack.ctx, w.account.id);
    const siblingReward = await makeReward(stack.ctx, sibling.id, { isUnlimited: true });
    const siblingWorld = { ...w, campaign: sibling, reward: siblingReward };
    const busy = uniqueEmail('busy');
    for (let i = 0; i < 3; i++) await act(siblingWorld, busy);

    const email = uniqueEmail('solo');
    await act(w, email);
    const r = await getParticipant(w, encodeURIComponent(email));
    expect(r.body).toMatchObject({ rank: 1, monthlyRank: 1 });
  });
});
