import {
  backlogBatch,
  type Ctx,
  fanOutEvents,
  type NewEvent,
  recordEvents,
  systemClock,
  waits,
} from '@stampcard/core';
import { webhookEndpoints, webhookMessages } from '@stampcard/db';
import { asc, eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { makeEndpoint, makeWorld } from '../../../test/support/factories';
import { useTestDb } from '../../../test/support/use';

const testDb = useTestDb();

describe('ordered messages and a discard of pending messages, in PostgreSQL', () => {
  it('a message made after the discard started, waiting behind a discarded one, is made due by that batch', async () => {
    const ctx: Ctx = { db: testDb.db, clock: systemClock };
    const w = await makeWorld(ctx);
    const endpointId = await makeEndpoint(
      ctx,
      { accountId: w.account.id, campaignId: w.campaign.id },
      { ordering: 'PARTICIPANT' },
    );
    const event = () =>
      ({
        campaignId: w.campaign.id,
        type: 'LOYALTY_ACTION_APPLIED',
        data: { participant: { id: 'prt_o' }, campaign: { id: w.campaign.id } },
      }) as NewEvent;
    const messages = () =>
      ctx.db
        .select()
        .from(webhookMessages)
        .where(eq(webhookMessages.endpointId, endpointId))
        .orderBy(asc(webhookMessages.sequence));

    await fanOutEvents(ctx, await recordEvents(ctx, [event()]));
    // A discard starts (its batches not run yet), then the participant's next message comes: it waits.
    const startedAt = new Date();
    await new Promise((r) => setTimeout(r, 5));
    const [ep] = await ctx.db
      .update(webhookEndpoints)
      .set({
        backlogKind: 'DISCARD',
        backlogState: 'RUNNING',
        backlogStartedAt: startedAt,
        backlogTouchedAt: startedAt,
      })
      .where(eq(webhookEndpoints.id, endpointId))
      .returning();
    const second = await fanOutEvents(ctx, await recordEvents(ctx, [event()]));
    expect(second.scheduled).toEqual([]);
    const [, waiting] = await messages();
    expect(waits(waiting!)).toBe(true);

    const batch = await backlogBatch(ctx, ep!, 100);
    expect(batch.handled).toBe(1);
    expect(batch.scheduled).toEqual([
      expect.objectContaining({ messageId: waiting!.id, generation: waiting!.generation, endpointId }),
    ]);
    const [discarded, released] = await messages();
    expect(discarded).toMatchObject({ sequence: 1, status: 'DISCARDED' });
    expect(released).toMatchObject({ sequence: 2, status: 'PENDING', previousId: null });
    expect(waits(released!)).toBe(false);
  });
});
