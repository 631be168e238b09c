import { loyaltyActions } from '@stampcard/db';
import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { client, eventually, overHttp } from '../support/client';
import { makeWorld, uniqueEmail } from '../support/factories';
import { useTestStack } from '../support/use';

const stack = useTestStack({ http: true, worker: false });

async function wipeQueue() {
  // What a Redis restart without persistence does to this stack's queue: every key of its prefix is gone.
  const keys = await stack.redis.keys(`${stack.prefix}:*`);
  if (keys.length > 0) await stack.redis.del(...keys);
}

describe('Redis is the transport, PostgreSQL the record', () => {
  it('actions accepted before Redis lost its data are applied once the relay runs', async () => {
    const w = await makeWorld(stack.ctx, { reward: { conversionsRequired: 3, limit: 1 } });
    const api = client(overHttp(stack.baseUrl!), w.key);
    const email = uniqueEmail('relay');
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await api.post(`/v1/campaign/${w.campaign.id}/loyalty-action`, {
        participantEmail: email,
        rewardId: w.reward.id,
        metadata: { i },
      });
      expect(r.status).toBe(200);
      ids.push(r.body.action.id);
    }
    expect(await stack.deps.queues.loyaltyActions.getJobCountByTypes('waiting')).toBe(3);
    await wipeQueue();
    expect(await stack.deps.queues.loyaltyActions.getJobCountByTypes('waiting')).toBe(0);

    const worker = stack.startWorker();
    expect(await worker.relay.runOnce()).toBe(3);
    for (const id of ids) {
      const a = await eventually(
        () => api.get(`/v1/campaign/${w.campaign.id}/loyalty-action/${id}`),
        (r) => r.body.status === 'APPLIED',
      );
      expect(a.status).toBe(200);
    }
    const p = await api.get(`/v1/campaign/${w.campaign.id}/participant/${encodeURIComponent(email)}`);
    expect(p.body.loyaltyActionCount).toBe(3);
    expect(p.body.rewards).toHaveLength(1);
    // A second sweep finds nothing left to do, and re-running applied actions changes nothing.
    expect(await worker.relay.runOnce()).toBe(0);
    await stack.stopWorker();
  });

  it('an action whose enqueue never happened is queued by the relay, exactly once', async () => {
    const w = await makeWorld(stack.ctx, { reward: { isUnlimited: true } });
    const api = client(overHttp(stack.baseUrl!), w.key);
    const r = await api.post(`/v1/campaign/${w.campaign.id}/loyalty-action`, {
      participantEmail: uniqueEmail('lost'),
      rewardId: w.reward.id,
    });
    const id = r.body.action.id as string;
    await stack.deps.queues.loyaltyActions.remove(id);
    const worker = stack.startWorker();
    const [first, second] = await Promise.all([worker.relay.runOnce(), worker.relay.runOnce()]);
    expect(first).toBe(1);
    expect(second).toBe(1); // concurrent calls share one sweep
    await eventually(
      async () =>
        (await stack.ctx.db.select().from(loyaltyActions).where(eq(loyaltyActions.id, id)))[0]?.status,
      (s) => s === 'APPLIED',
    );
    const p = await api.get(`/v1/campaign/${w.campaign.id}/participant/${r.body.action.participantId}`);
    expect(p.body.loyaltyActionCount).toBe(1);
    await stack.stopWorker();
  });
});
