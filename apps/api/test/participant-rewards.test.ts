import {
  campaignRef,
  EMBEDDED_REWARDS,
  EVENT_SCHEMAS,
  newId,
  sentEventData,
  serializeParticipant,
  serializeParticipantReward,
  serializeParticipantRewardWithReward,
} from '@stampcard/core';
import { campaigns, events, participantRewards, participants, rewards, webhookMessages } from '@stampcard/db';
import { and, asc, eq, isNull, sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { client, eventually, expectErrorShape, inProcess } from '../../../test/support/client';
import { makeCampaign, makeUserWithKey, uniqueEmail } from '../../../test/support/factories';
import { useReceivers } from '../../../test/support/receiver';
import { refusals } from '../../../test/support/refused';
import { useTestStack } from '../../../test/support/use';
import { goalWorld, registerEndpoint } from '../../../test/support/webhooks';

// The dispatcher and its sweep run: events reach webhook endpoints as in production.
const stack = useTestStack({ dispatcher: true, sweep: true });
const refused = refusals(stack);

const receiver = useReceivers();

/**
 * A refused request writes nothing. The sweep and the deliveries change rows in the background, so the outbox
 * and the messages are let settle first: only then does the database stay still around the request.
 */
async function expectRefused(...args: Parameters<typeof refused>) {
  await eventually(
    async () =>
      (await stack.ctx.db.$count(events, isNull(events.dispatchedAt))) +
      (await stack.ctx.db.$count(webhookMessages, eq(webhookMessages.status, 'PENDING'))),
    (n) => n === 0,
  );
  return refused(...args);
}

const rewardRow = async (id: string) =>
  (await stack.ctx.db.select().from(participantRewards).where(eq(participantRewards.id, id)))[0];
const participantRow = async (id: string) =>
  (await stack.ctx.db.select().from(participants).where(eq(participants.id, id)))[0]!;
const campaignRow = async (id: string) =>
  (await stack.ctx.db.select().from(campaigns).where(eq(campaigns.id, id)))[0]!;

/** The campaign's outbox events of `type`, oldest first. */
const eventsOf = (campaignId: string, type: string) =>
  stack.ctx.db
    .select()
    .from(events)
    .where(and(eq(events.campaignId, campaignId), eq(events.type, type)))
    .orderBy(asc(events.seq));

/** An action that unlocks one reward; answers the participant's id and the reward's. */
async function earn(w: Awaited<ReturnType<typeof goalWorld>>, email = uniqueEmail()) {
  const { action } = await w.act(email);
  expect(action.unlockedRewards).toHaveLength(1);
  return {
    email,
    participantId: (action as any).participantId as string,
    prewId: action.unlockedRewards[0]!.id,
  };
}

/** The `webhook-events.fan-out` jobs queued so far, by their event ids (the sweep fans out without a job). */
async function fanOutJobs() {
  const jobs = await stack.deps.queues
    .forJob('webhook-events.fan-out')
    .getJobs(['completed', 'active', 'waiting', 'delayed', 'failed']);
  return jobs.map((j) => (j.data as { eventIds: string[] }).eventIds);
}

/** Waits for a fan-out job of exactly `eventIds`: a write's jobs are queued right after its COMMIT, not before. */
function fanOutJobOf(eventIds: string[]) {
  const same = (ids: string[]) => JSON.stringify(ids) === JSON.stringify(eventIds);
  return eventually(
    async () => (await fanOutJobs()).find(same),
    (found) => found !== undefined,
  );
}

describe("a participant's rewards", () => {
  it('are listed oldest first, each exactly once across pages, by email or by id', async () => {
    const w = await goalWorld(stack);
    const { email, participantId, prewId } = await earn(w);
    await earn(w); // another participant's reward is never listed
    const first = (await rewardRow(prewId))!;
    // 44 more, several earned in the same millisecond (ties go by id), inserted in no particular order.
    const base = first.createdAt.getTime() + 1000;
    const made = Array.from({ length: 44 }, (_, i) => ({
      id: newId('participantReward'),
      campaignId: w.campaign.id,
      participantId,
      rewardId: w.reward.id,
      status: 'PENDING' as const,
      approved: i % 2 === 0,
      approvedAt: i % 2 === 0 ? new Date(base) : null,
      earnedMonth: first.earnedMonth,
      createdAt: new Date(base + Math.floor(i / 3)),
    }));
    await stack.ctx.db.insert(participantRewards).values([...made].sort(() => Math.random() - 0.5));
    // Counted on the participant as the worker counts what it unlocks.
    await stack.ctx.db
      .update(participants)
      .set({ rewardCount: sql`${participants.rewardCount} + ${made.length}` })
      .where(eq(participants.id, participantId));
    const expected = [first, ...made]
      .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || (a.id < b.id ? -1 : 1))
      .map((r) => r.id);

    const path = `/v1/campaign/${w.campaign.id}/participant/${email}/rewards`;
    const pages: { ids: string[]; limit: number; more: boolean; nextId: string | null }[] = [];
    let nextId: string | null = null;
    do {
      const res = await w.api.get(nextId ? `${path}?nextId=${nextId}` : path);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(Object.keys(res.body).sort()).toEqual(['limit', 'more', 'nextId', 'rewards']);
      pages.push({ ...res.body, ids: res.body.rewards.map((r: { id: string }) => r.id) });
      nextId = res.body.nextId;
    } while (nextId && pages.length < 10);
    expect(pages.map((p) => p.ids.length)).toEqual([20, 20, 5]);
    expect(pages.map((p) => p.more)).toEqual([true, true, false]);
    expect(pages.map((p) => p.limit)).toEqual([20, 20, 20]);
    // `nextId` is the first reward of the next page; null on the last page.
    expect(pages.map((p) => p.nextId)).toEqual([pages[1]!.ids[0], pages[2]!.ids[0], null]);
    expect(pages.flatMap((p) => p.ids)).toEqual(expected);

    // Each is the ParticipantReward as the seed shows it (the participant's own `rewards` too).
    const all = await w.api.get(`${path}?limit=100`);
    const rows = await stack.ctx.db
      .select()
      .from(participantRewards)
      .where(eq(participantRewards.participantId, participantId));
    const byId = new Map(rows.map((r) => [r.id, serializeParticipantReward(r)]));
    expect(all.body).toEqual({
      rewards: expected.map((id) => byId.get(id)),
      limit: 100,
      nextId: null,
      more: false,
    });
    // The participant itself shows the newest of them, newest first, and the total.
    const shown = await w.api.get(`/v1/campaign/${w.campaign.id}/participant/${participantId}`);
    expect(shown.body.rewards).toEqual(all.body.rewards.slice(-EMBEDDED_REWARDS).reverse());
    expect(shown.body).toMatchObject({
      rewardCount: 45,
      moreRewards: true,
      rewardsUrl: `/v1/campaign/${w.campaign.id}/participant/${participantId}/rewards`,
    });

    // By id, and by the email in another case: the same list.
    const byParticipantId = await w.api.get(
      `/v1/campaign/${w.campaign.id}/participant/${participantId}/rewards?limit=100`,
    );
    expect(byParticipantId.body).toEqual(all.body);
    const shouted = await w.api.get(
      `/v1/campaign/${w.campaign.id}/participant/${email.toUpperCase()}/rewards?limit=100`,
    );
    expect(shouted.body).toEqual(all.body);

    // The bounds of `limit`, and `more` exact when a page ends on the last reward.
    const one = await w.api.get(`${path}?limit=1`);
    expect(one.body).toMatchObject({ limit: 1, more: true, nextId: expected[1] });
    expect(one.body.rewards.map((r: { id: string }) => r.id)).toEqual([expected[0]]);
    const exact = await w.api.get(`${path}?limit=45`);
    expect(exact.body).toMatchObject({ limit: 45, more: false, nextId: null });
    const tail = await w.api.get(`${path}?nextId=${expected[40]}&limit=5`);
    expect(tail.body.rewards.map((r: { id: string }) => r.id)).toEqual(expected.slice(40));
    expect(tail.body).toMatchObject({ more: false, nextId: null });
  });

  it('is an empty page for a participant without rewards', async () => {
    const w = await goalWorld(stack, { reward: { conversionsRequired: 2 } });
    const email = uniqueEmail();
    const { action } = await w.act(email);
    expect(action.unlockedRewards).toEqual([]);
    const res = await w.api.get(`/v1/campaign/${w.campaign.id}/participant/${email}/rewards`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ rewards: [], limit: 20, nextId: null, more: false });
  });

  it('refuses bad paging, unknown participants and cursors, and callers who cannot reach the campaign', async () => {
    const w = await goalWorld(stack);
    const other = await goalWorld(stack);
    const { email } = await earn(w);
    const { email: theirEmail, prewId: theirs } = await earn(other);
    const path = `/v1/campaign/${w.campaign.id}/participant/${email}/rewards`;
    for (const [q, param] of [
      ['limit=0', 'limit'],
      ['limit=101', 'limit'],
      ['limit=abc', 'limit'],
      ['limit=1.5', 'limit'],
      ['nextId=', 'nextId'],
      [`nextId=${'x'.repeat(65)}`, 'nextId'],
      ['colour=red', 'colour'],
    ] as const) {
      const body = await expectRefused(() => w.api.get(`${path}?${q}`), 400, 'VALIDATION_ERROR');
      expect(body.errors).toEqual([expect.objectContaining({ location: 'query', param })]);
    }
    // Unknown participants, by email and by id; a participant of another campaign is unknown here too.
    for (const who of ['nobody@example.com', 'nosuchparticipant', theirEmail]) {
      const body = await expectRefused(
        () => w.api.get(`/v1/campaign/${w.campaign.id}/participant/${who}/rewards`),
        404,
        'NOT_FOUND',
      );
      expect(body.message).toContain(who);
    }
    // A cursor that is not one of this participant's rewards.
    for (const nextId of [theirs, 'prew_missing']) {
      const body = await expectRefused(() => w.api.get(`${path}?nextId=${nextId}`), 404, 'NOT_FOUND');
      expect(body.message).toContain(nextId);
    }
    await expectRefused(
      () => w.api.get(`/v1/campaign/nosuchcampaign/participant/${email}/rewards`),
      404,
      'NOT_FOUND',
    );
    // Another account's campaign, with its own participant; a MEMBER without access; no key.
    const b = await expectRefused(
      () => w.api.get(`/v1/campaign/${other.campaign.id}/participant/${theirEmail}/rewards`),
      403,
      'NOT_AUTHORIZED',
    );
    expect(b.message).toMatch(/another account/);
    const member = await makeUserWithKey(stack.ctx, w.account.id, { role: 'MEMBER', campaignIds: [] });
    await expectRefused(() => client(inProcess(stack.app), member.key).get(path), 403, 'NOT_AUTHORIZED');
    expectErrorShape(await client(inProcess(stack.app)).get(path), 403, 'NOT_AUTHORIZED');
  });
});

describe('approving a reward', () => {
  it('approves it once, counts the winner once, and sends the goal to fulfilment, whose 2xx fulfils it once', async () => {
    const fulfil = await receiver();
    const watcher = await receiver();
    const w = await goalWorld(stack, { campaign: { requireRewardApproval: true } });
    await registerEndpoint(stack, w.campaign.id, { url: fulfil.url, kind: 'FULFILMENT' });
    await registerEndpoint(stack, w.campaign.id, {
      url: watcher.url,
      eventTypes: ['PARTICIPANT_REWARD_FULFILLED'],
    });
    const { email, participantId, prewId } = await earn(w);
    expect(await rewardRow(prewId)).toMatchObject({ approved: false, approvedAt: null, status: 'PENDING' });
    expect((await participantRow(participantId)).approvedRewardCount).toBe(0);
    expect((await campaignRow(w.campaign.id)).winnerCount).toBe(0);

    // Two approvals at once: one approves, the other finds it approved.
    const path = `/v1/campaign/${w.campaign.id}/reward/${prewId}/approve`;
    const both = await Promise.all([w.api.post(path, {}), w.api.post(path)]);
    expect(both.map((r) => r.status).sort()).toEqual([200, 400]);
    const ok = both.find((r) => r.status === 200)!;
    expectErrorShape(both.find((r) => r.status === 400)!, 400, 'INVALID_STATE');
    const approved = (await rewardRow(prewId))!;
    expect(approved).toMatchObject({ approved: true, status: 'PENDING', isFulfilled: false });
    expect(ok.body).toEqual(serializeParticipantReward(approved));
    expect(ok.body).toMatchObject({
      id: prewId,
      approved: true,
      approvedAt: expect.any(Number),
      isAvailable: true,
      isFulfilled: false,
      fulfilledAt: null,
    });
    const participant = await participantRow(participantId);
    expect(participant.approvedRewardCount).toBe(1);
    expect((await campaignRow(w.campaign.id)).winnerCount).toBe(1);
    const campaignRead = await w.api.get(`/v1/campaign/${w.campaign.id}`);
    expect(campaignRead.body.winnerCount).toBe(1);
    expect((await w.api.get(`/v1/campaign/${w.campaign.id}/participant/${email}`)).body.isWinner).toBe(true);

    // PARTICIPANT_REACHED_A_GOAL, once, as the apply path writes it; handed to the dispatcher at once.
    const goals = await eventsOf(w.campaign.id, 'PARTICIPANT_REACHED_A_GOAL');
    expect(goals).toHaveLength(1);
    const [reward] = await stack.ctx.db.select().from(rewards).where(eq(rewards.id, w.reward.id));
    const data = EVENT_SCHEMAS.PARTICIPANT_REACHED_A_GOAL.parse(sentEventData(goals[0]!.data));
    expect(data).toEqual({
      participant: serializeParticipant(participant, { now: approved.approvedAt! }),
      reward: serializeParticipantRewardWithReward(approved, reward!),
      campaign: campaignRef(await campaignRow(w.campaign.id)),
    });
    expect(data.participant.isWinner).toBe(true);
    expect(await fanOutJobOf([goals[0]!.id])).toEqual([goals[0]!.id]);

    // The FULFILMENT endpoint gets the goal; its 2xx fulfils the reward, and that is announced, once.
    const [goal] = await fulfil.waitFor(1);
    expect(goal!.json).toMatchObject({
      type: 'PARTICIPANT_REACHED_A_GOAL',
      data: { reward: { id: prewId } },
    });
    expect(goal!.headers['stampcard-event-id']).toBe(goals[0]!.id);
    const [notice] = await watcher.waitFor(1);
    const fulfilled = (await rewardRow(prewId))!;
    expect(fulfilled).toMatchObject({ status: 'FULFILLED', isFulfilled: true });
    expect(notice!.json.data.reward).toMatchObject({
      id: prewId,
      status: 'FULFILLED',
      isFulfilled: true,
      fulfilledAt: fulfilled.fulfilledAt!.getTime(),
    });

    // Fulfilled already: the API's fulfil and a second approval are refused; nothing moves.
    const again = await expectRefused(
      () => w.api.post(`/v1/campaign/${w.campaign.id}/reward/${prewId}/fulfill`),
      400,
      'INVALID_STATE',
    );
    expect(again.message).toMatch(/already fulfilled/);
    const twice = await expectRefused(() => w.api.post(path, { fulfill: true }), 400, 'INVALID_STATE');
    expect(twice.message).toMatch(/already approved/);
    expect(await eventsOf(w.campaign.id, 'PARTICIPANT_REWARD_FULFILLED')).toHaveLength(1);
    expect(await eventsOf(w.campaign.id, 'PARTICIPANT_REACHED_A_GOAL')).toHaveLength(1);
    expect(watcher.received).toHaveLength(1);
    expect(fulfil.received).toHaveLength(1);

    // The same participant's second approved reward: their count moves, the campaign's winners do not.
    const second = await earn(w, email);
    const res = await w.api.post(`/v1/campaign/${w.campaign.id}/reward/${second.prewId}/approve`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect((await participantRow(participantId)).approvedRewardCount).toBe(2);
    expect((await campaignRow(w.campaign.id)).winnerCount).toBe(1);
    await fulfil.waitFor(2);
    await watcher.waitFor(2);
  });

  it('with fulfill: true, also fulfils it in the same change; the FULFILMENT 2xx then changes nothing', async () => {
    const fulfil = await receiver();
    const w = await goalWorld(stack, { campaign: { requireRewardApproval: true } });
    await registerEndpoint(stack, w.campaign.id, { url: fulfil.url, kind: 'FULFILMENT' });
    const { participantId, prewId } = await earn(w);
    const res = await w.api.post(`/v1/campaign/${w.campaign.id}/reward/${prewId}/approve`, {
      fulfill: true,
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const row = (await rewardRow(prewId))!;
    expect(res.body).toEqual(serializeParticipantReward(row));
    expect(res.body).toMatchObject({
      approved: true,
      status: 'FULFILLED',
      isFulfilled: true,
      isAvailable: false,
      fulfilledAt: res.body.approvedAt,
    });
    expect((await participantRow(participantId)).approvedRewardCount).toBe(1);
    expect((await campaignRow(w.campaign.id)).winnerCount).toBe(1);
    // Both events, from the one transaction, handed over together.
    const [goal] = await eventsOf(w.campaign.id, 'PARTICIPANT_REACHED_A_GOAL');
    const [done] = await eventsOf(w.campaign.id, 'PARTICIPANT_REWARD_FULFILLED');
    expect(goal!.seq).toBeLessThan(done!.seq);
    expect(goal!.txId).toBe(done!.txId);
    expect(EVENT_SCHEMAS.PARTICIPANT_REACHED_A_GOAL.parse(goal!.data).reward).toMatchObject({
      approved: true,
      isFulfilled: false,
    });
    expect(EVENT_SCHEMAS.PARTICIPANT_REWARD_FULFILLED.parse(done!.data).reward).toEqual(
      serializeParticipantRewardWithReward(
        row,
        (await stack.ctx.db.select().from(rewards).where(eq(rewards.id, w.reward.id)))[0]!,
      ),
    );
    expect(await fanOutJobOf([goal!.id, done!.id])).toEqual([goal!.id, done!.id]);

    await fulfil.waitFor(1);
    await eventually(
      () => stack.ctx.db.$count(webhookMessages, eq(webhookMessages.status, 'PENDING')),
      (n) => n === 0,
    );
    expect(await eventsOf(w.campaign.id, 'PARTICIPANT_REWARD_FULFILLED')).toHaveLength(1);
    expect((await rewardRow(prewId))!.fulfilledAt).toEqual(row.fulfilledAt);
  });

  it('takes no body, `fulfill: false`, and a form-encoded body', async () => {
    const w = await goalWorld(stack, { campaign: { requireRewardApproval: true } });
    const a = await earn(w);
    const b = await earn(w);
    const c = await earn(w);
    const url = (id: string) => `/v1/campaign/${w.campaign.id}/reward/${id}/approve`;
    const none = await w.api.post(url(a.prewId));
    expect(none.status, JSON.stringify(none.body)).toBe(200);
    expect(none.body).toMatchObject({ approved: true, isFulfilled: false });
    const no = await w.api.post(url(b.prewId), { fulfill: false });
    expect(no.body).toMatchObject({ approved: true, isFulfilled: false });
    const form = await w.api.post(url(c.prewId), 'fulfill=true', {
      'content-type': 'application/x-www-form-urlencoded',
    });
    expect(form.status, JSON.stringify(form.body)).toBe(200);
    expect(form.body).toMatchObject({ approved: true, isFulfilled: true, status: 'FULFILLED' });
    // Three new winners.
    expect((await campaignRow(w.campaign.id)).winnerCount).toBe(3);
  });
});

describe('fulfilling a reward by API', () => {
  it('fulfils an approved reward once, and refuses one not approved or already fulfilled', async () => {
    const watcher = await receiver();
    const w = await goalWorld(stack);
    await registerEndpoint(stack, w.campaign.id, {
      url: watcher.url,
      eventTypes: ['PARTICIPANT_REWARD_FULFILLED'],
    });
    const { participantId, prewId } = await earn(w);
    expect(await rewardRow(prewId)).toMatchObject({ approved: true, isFulfilled: false });
    const path = `/v1/campaign/${w.campaign.id}/reward/${prewId}/fulfill`;
    // Two at once: one fulfils, the other finds it fulfilled.
    const both = await Promise.all([w.api.post(path), w.api.post(path)]);
    expect(both.map((r) => r.status).sort()).toEqual([200, 400]);
    expectErrorShape(both.find((r) => r.status === 400)!, 400, 'INVALID_STATE');
    const row = (await rewardRow(prewId))!;
    expect(both.find((r) => r.status === 200)!.body).toEqual(serializeParticipantReward(row));
    expect(row).toMatchObject({ status: 'FULFILLED', isFulfilled: true, fulfilledAt: expect.any(Date) });

    const done = await eventsOf(w.campaign.id, 'PARTICIPANT_REWARD_FULFILLED');
    expect(done).toHaveLength(1);
    const [reward] = await stack.ctx.db.select().from(rewards).where(eq(rewards.id, w.reward.id));
    expect(EVENT_SCHEMAS.PARTICIPANT_REWARD_FULFILLED.parse(sentEventData(done[0]!.data))).toEqual({
      participant: serializeParticipant(await participantRow(participantId), { now: row.fulfilledAt! }),
      reward: serializeParticipantRewardWithReward(row, reward!),
      campaign: campaignRef(await campaignRow(w.campaign.id)),
    });
    expect(await fanOutJobOf([done[0]!.id])).toEqual([done[0]!.id]);
    const [notice] = await watcher.waitFor(1);
    expect(notice!.json.data.reward).toMatchObject({ id: prewId, status: 'FULFILLED' });

    const again = await expectRefused(() => w.api.post(path), 400, 'INVALID_STATE');
    expect(again.message).toMatch(/already fulfilled/);
    expect(await eventsOf(w.campaign.id, 'PARTICIPANT_REWARD_FULFILLED')).toHaveLength(1);

    // A reward waiting for approval cannot be fulfilled.
    const manual = await goalWorld(stack, { campaign: { requireRewardApproval: true } });
    const pending = await earn(manual);
    const body = await expectRefused(
      () => manual.api.post(`/v1/campaign/${manual.campaign.id}/reward/${pending.prewId}/fulfill`),
      400,
      'INVALID_STATE',
    );
    expect(body.message).toMatch(/not approved/);
    expect(watcher.received).toHaveLength(1);
  });
});

describe('removing a reward', () => {
  it('removes one not yet approved (freeing its limit), and refuses an approved one', async () => {
    // One reward per participant (limit 1): a removed one can be earned again.
    const w = await goalWorld(stack, {
      campaign: { requireRewardApproval: true },
      reward: { conversionsRequired: 1, limit: 1 },
    });
    const { email, prewId } = await earn(w);
    const { action: blocked } = await w.act(email);
    expect(blocked.unlockedRewards).toEqual([]);

    const res = await w.api.delete(`/v1/campaign/${w.campaign.id}/reward/${prewId}`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual({ success: true });
    expect(await rewardRow(prewId)).toBeUndefined();
    const list = await w.api.get(`/v1/campaign/${w.campaign.id}/participant/${email}/rewards`);
    expect(list.body.rewards).toEqual([]);
    // Gone now: removing it again is a 404.
    await expectRefused(
      () => w.api.delete(`/v1/campaign/${w.campaign.id}/reward/${prewId}`),
      404,
      'NOT_FOUND',
    );

    const again = await earn(w, email);
    const ok = await w.api.post(`/v1/campaign/${w.campaign.id}/reward/${again.prewId}/approve`);
    expect(ok.status).toBe(200);
    const body = await expectRefused(
      () => w.api.delete(`/v1/campaign/${w.campaign.id}/reward/${again.prewId}`),
      400,
      'INVALID_STATE',
    );
    expect(body.message).toMatch(/approved/);
    expect(await rewardRow(again.prewId)).toMatchObject({ approved: true });
  });
});

describe('the reward routes refuse', () => {
  it("unknown rewards, another campaign's, callers who cannot reach the campaign, and bad input", async () => {
    const w = await goalWorld(stack, { campaign: { requireRewardApproval: true } });
    const { prewId } = await earn(w);
    // A second campaign of the same account (the key reaches it), and another account's.
    const sibling = await makeCampaign(stack.ctx, w.account.id, { requireRewardApproval: true });
    const other = await goalWorld(stack, { campaign: { requireRewardApproval: true } });
    const { prewId: theirs } = await earn(other);
    const calls = (campaignId: string, id: string, api = w.api) => [
      () => api.post(`/v1/campaign/${campaignId}/reward/${id}/approve`, {}),
      () => api.post(`/v1/campaign/${campaignId}/reward/${id}/fulfill`),
      () => api.delete(`/v1/campaign/${campaignId}/reward/${id}`),
    ];

    for (const send of [
      ...calls(w.campaign.id, 'prew_missing'),
      ...calls(w.campaign.id, theirs),
      ...calls(sibling.id, prewId),
      ...calls('nosuchcampaign', prewId),
    ]) {
      await expectRefused(send, 404, 'NOT_FOUND');
    }
    for (const send of calls(other.campaign.id, theirs)) {
      const body = await expectRefused(send, 403, 'NOT_AUTHORIZED');
      expect(body.message).toMatch(/another account/);
    }
    const member = await makeUserWithKey(stack.ctx, w.account.id, { role: 'MEMBER', campaignIds: [] });
    for (const send of calls(w.campaign.id, prewId, client(inProcess(stack.app), member.key))) {
      await expectRefused(send, 403, 'NOT_AUTHORIZED');
    }
    for (const send of calls(w.campaign.id, prewId, client(inProcess(stack.app)))) {
      await expectRefused(send, 403, 'NOT_AUTHORIZED');
    }
    // A path parameter past its bound.
    for (const send of calls(w.campaign.id, `prew_${'x'.repeat(64)}`)) {
      const body = await expectRefused(send, 400, 'VALIDATION_ERROR');
      expect(body.errors).toEqual([expect.objectContaining({ param: 'participantRewardId' })]);
    }
    // Bodies of approve that are not `{ fulfill?: boolean }`.
    const approve = `/v1/campaign/${w.campaign.id}/reward/${prewId}/approve`;
    for (const [body, param] of [
      [{ fulfill: 'yes' }, 'fulfill'],
      [{ fulfill: null }, 'fulfill'],
      [{ colour: 'red' }, 'colour'],
      [[], ''],
    ] as const) {
      const refusedBody = await expectRefused(() => w.api.post(approve, body), 400, 'VALIDATION_ERROR');
      expect(refusedBody.errors).toEqual([expect.objectContaining({ location: 'body', param })]);
    }
    await expectRefused(
      () => w.api.post(approve, '{"fulfill":', { 'content-type': 'application/json' }),
      400,
      'VALIDATION_ERROR',
    );
    await expectRefused(
      () => w.api.post(approve, 'fulfill=maybe', { 'content-type': 'application/x-www-form-urlencoded' }),
      400,
      'VALIDATION_ERROR',
    );
    // Nothing of that approved anything.
    expect(await rewardRow(prewId)).toMatchObject({ approved: false });
    expect(await eventsOf(w.campaign.id, 'PARTICIPANT_REACHED_A_GOAL')).toEqual([]);
  });
});
