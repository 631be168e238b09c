import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually } from '../../../test/support/client';
import { type Receiver, startReceiver } from '../../../test/support/receiver';
import { useTestStack } from '../../../test/support/use';
import { goalWorld, messagesOf, operator, registerEndpoint } from '../../../test/support/webhooks';

const stack = useTestStack({
  dispatcher: true,
  sweep: true,
  retrySchedule: '50,100,200',
  webhookTimeoutMs: 1000,
});

let receivers: Receiver[] = [];
async function receiver(...args: Parameters<typeof startReceiver>) {
  const r = await startReceiver(...args);
  receivers.push(r);
  return r;
}
afterEach(async () => {
  await Promise.all(receivers.map((r) => r.close()));
  receivers = [];
});

describe('delivery', () => {
  it('delivers each event signed: standardwebhooks verifies it, and the goal carries the whole Reward', async () => {
    const rx = await receiver();
    const w = await goalWorld(stack);
    const ep = await registerEndpoint(stack, w.campaign.id, { url: rx.url });
    expect(ep.secret).toMatch(/^whsec_/);
    await w.act();
    const got = await rx.waitFor(3);
    const types = got.map((r) => r.json.type).sort();
    expect(types).toEqual(['LOYALTY_ACTION_APPLIED', 'NEW_PARTICIPANT_ADDED', 'PARTICIPANT_REACHED_A_GOAL']);
    const wh = new Webhook(ep.secret);
    for (const r of got) {
      const verified = wh.verify(r.body, r.headers as Record<string, string>) as any;
      expect(verified).toEqual(r.json);
      expect(Object.keys(r.json).sort()).toEqual(['data', 'timestamp', 'type']);
      expect(r.headers['webhook-id']).toMatch(/^msg_/);
      expect(r.headers['content-type']).toBe('application/json');
    }
    const goal = got.find((r) => r.json.type === 'PARTICIPANT_REACHED_A_GOAL')!.json;
    expect(goal.data.reward).toMatchObject({ rewardId: w.reward.id, title: w.reward.title, approved: true });
    const messages = await eventually(
      () => messagesOf(stack, ep.id),
      (ms) => ms.length === 3 && ms.every((m) => m.status === 'SUCCEEDED'),
    );
    for (const m of messages) {
      expect(m.attemptLog).toHaveLength(1);
      expect(m.attemptLog[0]).toMatchObject({ statusCode: 200, succeeded: true, responseExcerpt: 'ok' });
    }
  });

  it('an endpoint gets only the event types it asked for', async () => {
    const rx = await receiver();
    const w = await goalWorld(stack);
    await registerEndpoint(stack, w.campaign.id, { url: rx.url, eventTypes: ['PARTICIPANT_REACHED_A_GOAL'] });
    await w.act();
    await w.act();
    const got = await rx.waitFor(2);
    await new Promise((r) => setTimeout(r, 300));
    expect(got.map((r) => r.json.type)).toEqual(['PARTICIPANT_REACHED_A_GOAL', 'PARTICIPANT_REACHED_A_GOAL']);
  });

  it('a 500 is retried with the same webhook-id until a 200', async () => {
    const rx = await receiver((_r, n) => (n < 2 ? { status: 500, body: 'boom' } : {}));
    const w = await goalWorld(stack);
    const ep = await registerEndpoint(stack, w.campaign.id, {
      url: rx.url,
      eventTypes: ['PARTICIPANT_REACHED_A_GOAL'],
    });
    await w.act();
    const got = await rx.waitFor(3);
    expect(new Set(got.map((r) => r.headers['webhook-id'])).size).toBe(1);
    const [m] = await eventually(
      () => messagesOf(stack, ep.id),
      (ms) => ms[0]?.status === 'SUCCEEDED',
    );
    expect(m.attempts).toBe(3);
    expect(m.attemptLog.map((a: any) => [a.statusCode, a.errorClass, a.responseExcerpt])).toEqual([
      [500, 'HTTP_STATUS', 'boom'],
      [500, 'HTTP_STATUS', 'boom'],
      [200, null, 'ok'],
    ]);
  });
});
