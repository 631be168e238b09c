import { manualClock } from '@stampcard/core';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { client, eventually, inProcess } from '../support/client';
import { makeWorld, uniqueEmail } from '../support/factories';
import { useReceivers } from '../support/receiver';
import { useTestStack } from '../support/use';
import { operator, registerEndpoint } from '../support/webhooks';

const DAY = 86_400_000;
// The stack's clock is the test's: weeks pass in a moment, and the worker's partition maintenance runs on it.
const clock = manualClock(Date.now());
const stack = useTestStack({ clock, dispatcher: true });
const receiver = useReceivers();

describe('retention by partitions', () => {
  it('a feed and a replay read across weeks, and once a week is dropped say that what they ask for is past retention', async () => {
    const w = await makeWorld(stack.ctx, { reward: { conversionsRequired: 1, isUnlimited: true } });
    const hooks = await receiver();
    const endpoint = await registerEndpoint(stack, w.campaign.id, {
      url: hooks.url,
      eventTypes: ['LOYALTY_ACTION_APPLIED'],
    });
    const api = client(inProcess(stack.app), w.key);
    const act = async () => {
      const res = await api.post(`/v1/campaign/${w.campaign.id}/loyalty-action?wait=true`, {
        participantEmail: uniqueEmail('kept'),
        rewardId: w.reward.id,
      });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
    };
    const feed = async (after?: string) =>
      api.get(`/v1/campaign/${w.campaign.id}/events?limit=100${after ? `&after=${after}` : ''}`);
    const applied = async () =>
      ((await feed()).body.events as { id: string; type: string }[]).filter(
        (e) => e.type === 'LOYALTY_ACTION_APPLIED',
      );

    // Three weeks, one action each: three partitions of events, messages and attempts (the first may be the one
    // that holds the rows from before partitioning).
    for (let week = 0; week < 3; week++) {
      if (week > 0) {
        clock.advance(7 * DAY);
        await stack.worker!.partitionMaintenance.runOnce();
      }
      await act();
    }
    await eventually(
      () => Promise.resolve(hooks.received.length),
      (n) => n === 3,
    );
    const events = await applied();
    expect(events).toHaveLength(3);
    const partitions = await stack.ctx.db.execute<{ id: string; partition: string }>(
      sql`select id, tableoid::regclass::text as partition from events where id = any(${sql.param(events.map((e) => e.id))}::text[])`,
    );
    expect(new Set(partitions.map((p) => p.partition)).size).toBe(3);
    // The feed pages across them in order, from each cursor.
    const after = await feed(events[0]!.id);
    expect(after.status).toBe(200);
    expect(
      (after.body.events as { id: string; type: string }[])
        .filter((e) => e.type === 'LOYALTY_ACTION_APPLIED')
        .map((e) => e.id),
    ).toEqual([events[1]!.id, events[2]!.id]);
    const messages = (
      await operator(stack).get(`/admin/v1/webhook-endpoints/${endpoint.id}/messages?limit=10`)
    ).body.messages as { id: string; eventId: string }[];
    const first = messages.find((m) => m.eventId === events[0]!.id)!;
    expect((await operator(stack).post(`/admin/v1/webhook-messages/${first.id}/replay`)).status).toBe(200);

    // The retention of the first week passes: its partitions are dropped whole, the later weeks stay.
    const retention = (await operator(stack).get('/admin/v1/retention')).body.tables as {
      table: string;
      partitions: { name: string; to: number; dropsAt: number }[];
      nextDrop: { name: string; at: number };
    }[];
    const ofEvents = retention.find((t) => t.table === 'events')!;
    const home = partitions.find((p) => p.id === events[0]!.id)!.partition;
    const doomed = ofEvents.partitions.find((p) => p.name === home)!;
    expect(ofEvents.nextDrop.name).toBe(ofEvents.partitions[0]!.name);
    expect(doomed.dropsAt).toBe(doomed.to + 90 * DAY);
    clock.set(new Date(doomed.dropsAt + 1000));
    const run = await stack.worker!.partitionMaintenance.runOnce();
    expect(run!.dropped).toContain(home);
    expect(run!.failed).toEqual([]);

    const past = await feed(events[0]!.id);
    expect(past.status).toBe(404);
    expect(past.body).toMatchObject({ code: 'NOT_FOUND', reason: 'PAST_RETENTION' });
    expect(past.body.retainedFrom).toBe(doomed.to);
    expect(past.body.message).toContain('past retention');
    const replay = await operator(stack).post(`/admin/v1/webhook-messages/${first.id}/replay`);
    expect(replay.status).toBe(404);
    expect(replay.body).toMatchObject({
      code: 'NOT_FOUND',
      reason: 'PAST_RETENTION',
      retainedFrom: doomed.to,
    });
    // What is kept is as it was; an id that never existed is a plain 404.
    expect((await applied()).map((e) => e.id)).toEqual(events.slice(1).map((e) => e.id));
    const unknown = await feed('evt_doesNotExistAtAll1');
    expect(unknown.status).toBe(404);
    expect(unknown.body.reason).toBeUndefined();
  });
});
