import { fanOutEvents } from '@stampcard/core';
import type { Job } from 'bullmq';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { useTestStack } from '../../../test/support/use';
import { goalWorld, registerEndpoint } from '../../../test/support/webhooks';
import { fanOut } from '../src/processors/fan-out';

/** No dispatcher runs: the fan-outs here are the test's own. */
const stack = useTestStack({ dispatcher: false });

describe('a fan-out job whose events wait for an earlier one of their participant', () => {
  it('fans out events held back by an earlier one of their participant as soon as that one is fanned out', async () => {
    const w = await goalWorld(stack);
    await registerEndpoint(stack, w.campaign.id, { url: 'https://hooks.example.com/deferred' });
    await w.act();
    const rows = await stack.ctx.db.execute<{ id: string }>(
      sql`select id from events where campaign_id = ${w.campaign.id} order by seq`,
    );
    const [first, ...later] = rows.map((r) => r.id);
    expect(later.length).toBeGreaterThan(0);
    // Another fan-out of the first event, whose transaction commits 200 ms later.
    let started!: () => void;
    const holding = new Promise<void>((r) => {
      started = r;
    });
    const other = stack.ctx.db.transaction(async (tx) => {
      await fanOutEvents({ ...stack.ctx, db: tx }, [first!]);
      started();
      await new Promise((r) => setTimeout(r, 200));
    });
    await holding;
    const processor = fanOut(stack.ctx, stack.deps.queues);
    const result = await processor({ eventIds: later }, { attemptsStarted: 1 } as Job);
    await other;
    expect(result).toEqual({ events: later.length, messages: later.length });
    const [left] = await stack.ctx.db.execute<{ n: number }>(
      sql`select count(*)::int as n from events where campaign_id = ${w.campaign.id} and dispatched_at is null`,
    );
    expect(left!.n).toBe(0);
  });
});
