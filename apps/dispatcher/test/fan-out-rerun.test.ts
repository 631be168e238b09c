import { fanOutEvents } from '@stampcard/core';
import type { Job } from 'bullmq';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { eventually } from '../../../test/support/client';
import { startReceiver } from '../../../test/support/receiver';
import { useTestStack } from '../../../test/support/use';
import { goalWorld, messagesOf, registerEndpoint } from '../../../test/support/webhooks';
import { fanOut } from '../src/processors/fan-out';

const stack = useTestStack({ dispatcher: false });

describe('a fan-out job run again after its process died', () => {
  it('queues the messages its first run committed but never queued, once each', async () => {
    const rx = await startReceiver();
    const deliveries = stack.deps.queues.forJob('webhook-message.deliver');
    try {
      const w = await goalWorld(stack);
      const ep = await registerEndpoint(stack, w.campaign.id, {
        url: rx.url,
        eventTypes: ['LOYALTY_ACTION_APPLIED'],
      });
      await w.act();
      await w.act();
      // Every event of the two actions, as the worker's jobs carry them (a participant's events fan out in
      // order: its later ones wait for its earlier ones).
      const rows = await stack.ctx.db.execute<{ id: string; type: string }>(
        sql`select id, type from events where campaign_id = ${w.campaign.id} order by seq`,
      );
      const eventIds = rows.map((r) => r.id);
      expect(rows.filter((r) => r.type === 'LOYALTY_ACTION_APPLIED')).toHaveLength(2);
      // The first run: its statement committed (messages made, events dispatched), then the process died before
      // it queued a delivery.
      const first = await fanOutEvents(stack.ctx, eventIds);
      expect(first.scheduled).toHaveLength(2);
      const processor = fanOut(stack.ctx, stack.deps.queues);

      // A first run that finds its events dispatched queues nothing (another run is delivering them).
      await processor({ eventIds }, { attemptsStarted: 1 } as Job);
      expect(await deliveries.getJobCounts('waiting', 'delayed', 'prioritized')).toMatchObject({
        waiting: 0,
      });

      // Taken back from the dead process: the never-attempted messages go on, and again makes no second job.
      await processor({ eventIds }, { attemptsStarted: 2 } as Job);
      await processor({ eventIds }, { attemptsStarted: 3 } as Job);
      const waiting = await deliveries.getWaiting();
      expect(waiting.map((j) => j.data.messageId).sort()).toEqual(
        first.scheduled.map((s) => s.messageId).sort(),
      );

      stack.startDispatcher();
      await eventually(
        () => messagesOf(stack, ep.id),
        (ms) => ms.length === 2 && ms.every((m) => m.status === 'SUCCEEDED'),
      );
      await new Promise((r) => setTimeout(r, 300));
      expect(rx.received).toHaveLength(2);
    } finally {
      await rx.close();
    }
  });
});
