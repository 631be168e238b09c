import { loyaltyActions, participants } from '@stampcard/db';
import { and, eq, sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { client, eventually, inProcess } from '../../../test/support/client';
import { makeWorld, uniqueEmail } from '../../../test/support/factories';
import { useTestStack } from '../../../test/support/use';

const stack = useTestStack({ worker: false });

async function statusCounts(campaignId: string) {
  const rows = await stack.ctx.db
    .select({ status: loyaltyActions.status, n: sql<number>`count(*)`.mapWith(Number) })
    .from(loyaltyActions)
    .where(eq(loyaltyActions.campaignId, campaignId))
    .groupBy(loyaltyActions.status);
  return Object.fromEntries(rows.map((r) => [r.status, r.n])) as Record<string, number>;
}

describe('graceful shutdown of the worker', () => {
  it('finishes the jobs in hand, leaves the rest queued, and a restart applies them: nothing lost or doubled', async () => {
    const w = await makeWorld(stack.ctx, { reward: { isUnlimited: true } });
    const api = client(inProcess(stack.app), w.key);
    const email = uniqueEmail('shutdown');
    const total = 120;
    for (let i = 0; i < total; i++) {
      const r = await api.post(`/v1/campaign/${w.campaign.id}/loyalty-action`, {
        participantEmail: email,
        rewardId: w.reward.id,
        metadata: { i },
      });
      expect(r.status).toBe(200);
    }

    stack.startWorker();
    await eventually(
      () => statusCounts(w.campaign.id),
      (c) => (c.APPLIED ?? 0) > 0,
    );
    await stack.stopWorker();

    // Nothing is left half-done: no job active, and every applied action is counted exactly once.
    const queue = stack.deps.queues.forJob('loyalty-action.apply');
    expect(await queue.getActiveCount()).toBe(0);
    const afterStop = await statusCounts(w.campaign.id);
    const [p] = await stack.ctx.db
      .select()
      .from(participants)
      .where(and(eq(participants.campaignId, w.campaign.id), eq(participants.email, email)));
    expect(p!.loyaltyActionCount).toBe(afterStop.APPLIED);
    expect((afterStop.APPLIED ?? 0) + (afterStop.QUEUED ?? 0)).toBe(total);

    // What was still queued is still in the queue (or re-queued by the relay), and a new worker applies it.
    const worker = stack.startWorker();
    await worker.relay.runOnce();
    const final = await eventually(
      () => statusCounts(w.campaign.id),
      (c) => c.APPLIED === total,
    );
    expect(final).toEqual({ APPLIED: total });
    const [after] = await stack.ctx.db.select().from(participants).where(eq(participants.id, p!.id));
    expect(after!.loyaltyActionCount).toBe(total);
    await stack.stopWorker();
  });
});
