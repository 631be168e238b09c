import { describe, expect, it } from 'vitest';
import { eventually, expectErrorShape } from '../../../test/support/client';
import { uniqueEmail } from '../../../test/support/factories';
import { useReceivers } from '../../../test/support/receiver';
import { useTestStack } from '../../../test/support/use';
import { goalWorld, messagesOf, operator, registerEndpoint } from '../../../test/support/webhooks';

/**
 * `ordering: PARTICIPANT` with a participant whose messages always fail: its first message retries on a slow
 * schedule, its later ones wait, and the other participants' messages to the same endpoint flow as usual.
 */
const stack = useTestStack({
  dispatcher: true,
  sweep: true,
  retrySchedule: '1000,1000,1000,1000,1000',
  webhookTimeoutMs: 1000,
});

const receiver = useReceivers();

describe('ordered delivery per participant, one participant failing', () => {
  it('a participant whose messages always fail holds back only itself; its waiting ones cannot be replayed ahead', {
    timeout: 30_000,
  }, async () => {
    const stuck = uniqueEmail('stuck');
    const delivered = new Map<string, number[]>();
    const rx = await receiver((r) => {
      if (r.json?.data?.participant?.email === stuck) return { status: 500 };
      const p = r.json.data.participant.id as string;
      delivered.set(p, [...(delivered.get(p) ?? []), Number(r.headers['webhook-sequence'])]);
      return {};
    });
    const w = await goalWorld(stack);
    const ep = await registerEndpoint(stack, w.campaign.id, { url: rx.url, ordering: 'PARTICIPANT' });
    await w.act(stuck);
    await w.act(stuck);
    const others = [uniqueEmail(), uniqueEmail()];
    for (const e of others) {
      await w.act(e);
      await w.act(e);
    }
    // The others' 5 messages each arrive while the stuck one's first is still retrying.
    await eventually(
      async () => [...delivered.values()].map((s) => s.join(',')),
      (all) => all.length === 2 && all.every((s) => s === '1,2,3,4,5'),
      10_000,
    );
    const stuckMessages = (await messagesOf(stack, ep.id, '?limit=100')).filter(
      (m) => m.participantId !== null && !delivered.has(m.participantId),
    );
    expect(stuckMessages).toHaveLength(5);
    const head = stuckMessages.find((m) => m.sequence === 1)!;
    expect(head).toMatchObject({ status: 'PENDING', waiting: false });
    expect(head.attempts).toBeGreaterThan(0);
    const waiting = stuckMessages.filter((m) => m.sequence > 1);
    expect(waiting.every((m) => m.status === 'PENDING' && m.waiting && m.nextAttemptAt === null)).toBe(true);
    // Only its head was ever sent.
    const sentOfStuck = rx.received.filter((r) => r.json?.data?.participant?.email === stuck);
    expect(new Set(sentOfStuck.map((r) => r.headers['webhook-sequence']))).toEqual(new Set(['1']));

    const refused = await operator(stack).post(`/admin/v1/webhook-messages/${waiting[0]!.id}/replay`, {});
    expectErrorShape(refused, 400, 'INVALID_STATE');
    expect(refused.body.message).toMatch(/waits for an earlier message/);
  });

  it('ordering turned off applies to new messages at once; a discard leaves nothing waiting behind it', {
    timeout: 30_000,
  }, async () => {
    const stuck = uniqueEmail('stuck');
    const rx = await receiver((r) => (r.json?.data?.participant?.email === stuck ? { status: 500 } : {}));
    const sentOf = () =>
      rx.received
        .filter((r) => r.json?.data?.participant?.email === stuck)
        .map((r) => Number(r.headers['webhook-sequence']));
    const w = await goalWorld(stack);
    const ep = await registerEndpoint(stack, w.campaign.id, { url: rx.url, ordering: 'PARTICIPANT' });
    await w.act(stuck);
    await w.act(stuck);
    await eventually(
      async () => sentOf(),
      (s) => s.length > 0,
    );
    // 1 retries, 2 to 5 wait. All four made first: an event still deferred by the fan-out (its participant's
    // pending message held by a claim at that moment) would otherwise be fanned out after the switch below, as a
    // new, unordered message.
    await eventually(
      async () => (await messagesOf(stack, ep.id, '?limit=100')).filter((m) => m.waiting).length,
      (n) => n === 4,
    );
    const patched = await operator(stack).patch(`/admin/v1/webhook-endpoints/${ep.id}`, { ordering: 'NONE' });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body.ordering).toBe('NONE');
    await w.act(stuck);
    // Its new messages (6 and 7) go at once, while 2 to 5 still wait for 1.
    await eventually(
      async () => new Set(sentOf()),
      (s) => s.has(6) && s.has(7),
    );
    expect(sentOf().some((n) => n >= 2 && n <= 5)).toBe(false);
    const waiting = (await messagesOf(stack, ep.id, '?limit=100')).filter((m) => m.waiting);
    expect(waiting.map((m) => m.sequence).sort()).toEqual([2, 3, 4, 5]);

    // Back to PARTICIPANT, then the pending messages discarded: the next message goes at once, waiting for none.
    await operator(stack).patch(`/admin/v1/webhook-endpoints/${ep.id}`, { ordering: 'PARTICIPANT' });
    const discard = await operator(stack).post(`/admin/v1/webhook-endpoints/${ep.id}/discard-pending`, {});
    expect(discard.status, JSON.stringify(discard.body)).toBe(200);
    await eventually(
      async () => (await messagesOf(stack, ep.id, '?limit=100')).filter((m) => m.status === 'PENDING'),
      (pending) => pending.length === 0,
    );
    await w.act(stuck);
    await eventually(
      async () => new Set(sentOf()),
      (s) => s.has(8),
    );
    const eighth = (await messagesOf(stack, ep.id, '?limit=100')).find((m) => m.sequence === 8)!;
    expect(eighth).toMatchObject({ waiting: false, status: 'PENDING' });
  });
});
