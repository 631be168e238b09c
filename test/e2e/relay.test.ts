import { loyaltyActions } from '@stampcard/db';
import { JOBS, queuePrefix } from '@stampcard/jobs';
import { createRelay } from '@stampcard/worker';
import { type Processor, UnrecoverableError, Worker } from 'bullmq';
import { eq } from 'drizzle-orm';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { client, eventually, overHttp } from '../support/client';
import { makeWorld, uniqueEmail } from '../support/factories';
import { actionJob, handedOff, waitingActionJobs } from '../support/jobs';
import { useTestStack } from '../support/use';

const stack = useTestStack({ http: true, worker: false });

async function wipeQueue() {
  // What a Redis restart without persistence does to this stack's queues: every job is gone.
  await Promise.all(stack.deps.queues.all.map((q) => q.obliterate({ force: true })));
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
    // Each request's group commit queued its action in a batch job (right after its answer, which waits for
    // the COMMIT only).
    expect(
      await eventually(
        () => waitingActionJobs(stack),
        (q) => q.actions === 3,
      ),
    ).toEqual({ jobs: 3, actions: 3 });
    await wipeQueue();
    expect(await waitingActionJobs(stack)).toEqual({ jobs: 0, actions: 0 });

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
    await (await handedOff(stack, id)).remove();
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

  /** Lets a stand-in worker take the queued job once, so it ends failed or completed without being applied. */
  async function settleJobWith(actionId: string, processor: Processor, state: 'failed' | 'completed') {
    const queue = JOBS['loyalty-action-batch.apply'].queue;
    const standIn = new Worker(queue, processor, {
      connection: stack.redis,
      prefix: queuePrefix(stack.prefix, queue, stack.redis),
    });
    await eventually(
      async () => (await actionJob(stack, actionId))?.getState(),
      (s) => s === state,
    );
    await standIn.close();
  }

  async function acceptOne() {
    const w = await makeWorld(stack.ctx, { reward: { isUnlimited: true } });
    const api = client(overHttp(stack.baseUrl!), w.key);
    const r = await api.post(`/v1/campaign/${w.campaign.id}/loyalty-action`, {
      participantEmail: uniqueEmail('settled'),
      rewardId: w.reward.id,
    });
    expect(r.status).toBe(200);
    return {
      api,
      campaignId: w.campaign.id as string,
      action: r.body.action as { id: string; participantId: string },
    };
  }

  async function expectAppliedOnce(a: Awaited<ReturnType<typeof acceptOne>>) {
    await eventually(
      () => a.api.get(`/v1/campaign/${a.campaignId}/loyalty-action/${a.action.id}`),
      (r) => r.body.status === 'APPLIED',
    );
    const p = await a.api.get(`/v1/campaign/${a.campaignId}/participant/${a.action.participantId}`);
    expect(p.body.loyaltyActionCount).toBe(1);
  }

  it('a job that failed for good while its action is still QUEUED is retried by the relay', async () => {
    const a = await acceptOne();
    await settleJobWith(
      a.action.id,
      async () => {
        throw new UnrecoverableError('stand-in failure');
      },
      'failed',
    );
    const worker = stack.startWorker();
    expect(await worker.relay.runOnce()).toBe(1);
    await expectAppliedOnce(a);
    await stack.stopWorker();
  });

  it('a job that completed while its action is still QUEUED is queued again by the relay', async () => {
    const a = await acceptOne();
    await settleJobWith(a.action.id, async () => 'did nothing', 'completed');
    const worker = stack.startWorker();
    expect(await worker.relay.runOnce()).toBe(1);
    await expectAppliedOnce(a);
    expect(await worker.relay.runOnce()).toBe(0);
    await stack.stopWorker();
  });
  it('an action its batch job applied between the ledger read and the job look-up is not queued again', async () => {
    const a = await acceptOne();
    expect(await (await handedOff(stack, a.action.id)).getState()).toBe('waiting');
    // The relay reads the ledger (the action is QUEUED and, with no grace, stale), then looks for batch jobs: at
    // that moment a worker runs the batch job to its end, so the look-up finds neither the job nor the action.
    let ran: Promise<void> | undefined;
    const runTheBatchJob = async () => {
      stack.startWorker();
      await expectAppliedOnce(a);
      await eventually(
        async () => (await actionJob(stack, a.action.id))?.getState(),
        (s) => s === undefined || s === 'completed',
      );
    };
    const queues = new Proxy(stack.deps.queues, {
      get(target, prop, receiver) {
        if (prop !== 'shardsOf') return Reflect.get(target, prop, receiver);
        return (name: Parameters<typeof target.shardsOf>[0]) =>
          target.shardsOf(name).map((shard) =>
            name !== 'loyalty-action-batch.apply'
              ? shard
              : Object.assign(Object.create(shard), {
                  getJobs: async (...args: Parameters<typeof shard.getJobs>) => {
                    ran ??= runTheBatchJob();
                    await ran;
                    return shard.getJobs(...args);
                  },
                }),
          );
      },
    });
    const relay = createRelay({
      ctx: stack.ctx,
      queues,
      logger: pino({ level: 'silent' }),
      graceMs: 0,
      intervalMs: 60_000,
    });
    expect(await relay.runOnce()).toBe(0);
    expect(ran).toBeDefined();
    await stack.stopWorker();
  });

  it('an action still waiting in a batch job is not lost: the relay leaves it to that job', async () => {
    const a = await acceptOne();
    expect(await (await handedOff(stack, a.action.id)).getState()).toBe('waiting');
    // A relay alone (no worker takes jobs), with no grace: the action is stale, and in a waiting batch job.
    const relay = createRelay({
      ctx: stack.ctx,
      queues: stack.deps.queues,
      logger: pino({ level: 'silent' }),
      graceMs: 0,
      intervalMs: 60_000,
    });
    expect(await relay.runOnce()).toBe(0);
    stack.startWorker();
    await expectAppliedOnce(a);
    await stack.stopWorker();
  });
});
