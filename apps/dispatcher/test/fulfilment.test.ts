import { events, participantRewards } from '@stampcard/db';
import { and, eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { eventually } from '../../../test/support/client';
import { useReceivers } from '../../../test/support/receiver';
import { useTestStack } from '../../../test/support/use';
import { goalWorld, messagesOf, operator, registerEndpoint } from '../../../test/support/webhooks';

const stack = useTestStack({ dispatcher: true, sweep: true, retrySchedule: '50,100' });

const receiver = useReceivers();

const fulfilledEvents = async (campaignId: string) =>
  stack.ctx.db
    .select()
    .from(events)
    .where(and(eq(events.campaignId, campaignId), eq(events.type, 'PARTICIPANT_REWARD_FULFILLED')));

describe('fulfilment', () => {
  it("a FULFILMENT endpoint's 2xx marks the reward FULFILLED once, even when the 2xx comes twice", async () => {
    const fulfil = await receiver((_r, n) => (n === 0 ? { status: 500 } : {}));
    const second = await receiver();
    const watcher = await receiver();
    const w = await goalWorld(stack);
    const ep = await registerEndpoint(stack, w.campaign.id, { url: fulfil.url, kind: 'FULFILMENT' });
    await registerEndpoint(stack, w.campaign.id, { url: second.url, kind: 'FULFILMENT' });
    await registerEndpoint(stack, w.campaign.id, {
      url: watcher.url,
      eventTypes: ['PARTICIPANT_REWARD_FULFILLED'],
    });
    const email = `fulfil-${Date.now()}@example.com`;
    const { action } = await w.act(email);
    const prewId = action.unlockedRewards[0]!.id;

    const got = await fulfil.waitFor(2);
    expect(got.map((r) => r.json.type)).toEqual(['PARTICIPANT_REACHED_A_GOAL', 'PARTICIPANT_REACHED_A_GOAL']);
    expect(got[0]!.json.data.reward).toMatchObject({ id: prewId, title: w.reward.title, approved: true });
    const [notice] = await watcher.waitFor(1);
    expect(notice!.json.data.reward).toMatchObject({
      id: prewId,
      status: 'FULFILLED',
      isFulfilled: true,
      isAvailable: false,
      fulfilledAt: expect.any(Number),
    });
    const [row] = await stack.ctx.db
      .select()
      .from(participantRewards)
      .where(eq(participantRewards.id, prewId));
    expect(row).toMatchObject({ status: 'FULFILLED', isFulfilled: true });
    const fulfilledAt = row!.fulfilledAt!.getTime();
    expect(notice!.json.data.reward.fulfilledAt).toBe(fulfilledAt);

    // The same goal acknowledged again: a replay to the first endpoint, and the second endpoint's own 2xx.
    const [m] = await eventually(
      () => messagesOf(stack, ep.id),
      (ms) => ms[0]?.status === 'SUCCEEDED',
    );
    await operator(stack).post(`/admin/v1/webhook-messages/${m.id}/replay`);
    await fulfil.waitFor(3);
    await eventually(
      () => messagesOf(stack, ep.id),
      (ms) => ms[0]?.status === 'SUCCEEDED' && ms[0].attemptLog.length === 3,
    );
    await second.waitFor(1);
    await new Promise((r) => setTimeout(r, 400));
    expect(await fulfilledEvents(w.campaign.id)).toHaveLength(1);
    expect(watcher.received).toHaveLength(1);
    const [after] = await stack.ctx.db
      .select()
      .from(participantRewards)
      .where(eq(participantRewards.id, prewId));
    expect(after!.fulfilledAt!.getTime()).toBe(fulfilledAt);

    // And the public API shows it so.
    const shown = await w.api.get(`/v1/campaign/${w.campaign.id}/participant/${email}`);
    expect(shown.body.rewards).toEqual([
      expect.objectContaining({ id: prewId, status: 'FULFILLED', isFulfilled: true, fulfilledAt }),
    ]);
  });

  it('a NOTIFY endpoint answering the goal fulfils nothing; a reward waiting for approval is not sent to fulfilment', async () => {
    const notify = await receiver();
    const fulfil = await receiver();
    const w = await goalWorld(stack);
    await registerEndpoint(stack, w.campaign.id, {
      url: notify.url,
      eventTypes: ['PARTICIPANT_REACHED_A_GOAL'],
    });
    const { action } = await w.act();
    await notify.waitFor(1);
    await new Promise((r) => setTimeout(r, 300));
    const [row] = await stack.ctx.db
      .select()
      .from(participantRewards)
      .where(eq(participantRewards.id, action.unlockedRewards[0]!.id));
    expect(row!.isFulfilled).toBe(false);

    const manual = await goalWorld(stack, { campaign: { requireRewardApproval: true } });
    await registerEndpoint(stack, manual.campaign.id, { url: fulfil.url, kind: 'FULFILMENT' });
    const pending = await manual.act();
    expect(pending.action.unlockedRewards).toHaveLength(1);
    await new Promise((r) => setTimeout(r, 500));
    expect(fulfil.received).toHaveLength(0);
  });
});
