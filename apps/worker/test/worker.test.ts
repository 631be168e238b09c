import { randomBytes } from 'node:crypto';
import {
  type AppliedAction,
  acceptLoyaltyAction,
  applyActions,
  type CampaignRow,
  pgError,
} from '@stampcard/core';
import { campaigns, events, loyaltyActions, participants } from '@stampcard/db';
import { dispatchByName, duplicateRedis, enqueueActions, JOBS, queuePrefix } from '@stampcard/jobs';
import { Queue, Worker } from 'bullmq';
import { and, eq, sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { eventually } from '../../../test/support/client';
import { makeWorld, uniqueEmail } from '../../../test/support/factories';
import { actionJob } from '../../../test/support/jobs';
import { deleteRedisKeys, REDIS_URL, uniquePrefix } from '../../../test/support/redis-keys';
import { useTestStack } from '../../../test/support/use';
import { actionTraces, createActionBatcher } from '../src/batcher';
import { applyLoyaltyAction } from '../src/processors/apply-loyalty-action';
import { applyLoyaltyActions } from '../src/processors/apply-loyalty-actions';

describe('ActionBatcher', () => {
  /** A fake `apply` that records its calls; ids containing "bad" make the whole call throw. */
  function fakeApply() {
    const calls: string[][] = [];
    const apply = async (ids: string[]): Promise<AppliedAction[]> => {
      calls.push(ids);
      if (ids.some((id) => id.includes('bad'))) throw new Error(`cannot apply ${ids.join(',')}`);
      return ids
        .filter((id) => !id.includes('skip'))
        .map((id) => ({ id, status: 'APPLIED' as const, unlockedRewardIds: [], createdAt: new Date() }));
    };
    return { calls, apply };
  }

  it('groups submissions made together into one apply call; an id not applied resolves null', async () => {
    const { calls, apply } = fakeApply();
    const batcher = createActionBatcher({ apply, maxSize: 10, maxWaitMs: 1 });
    const results = await Promise.all(['act_1', 'act_skip', 'act_3'].map((id) => batcher.submit(id)));

    expect(calls).toEqual([['act_1', 'act_skip', 'act_3']]);
    expect(results).toEqual([
      { id: 'act_1', status: 'APPLIED', unlockedRewardIds: [], createdAt: expect.any(Date) },
      null,
      { id: 'act_3', status: 'APPLIED', unlockedRewardIds: [], createdAt: expect.any(Date) },
    ]);
  });

  it('flushes as soon as maxSize ids wait, and drain() applies the rest', async () => {
    const { calls, apply } = fakeApply();
    const batcher = createActionBatcher({ apply, maxSize: 2, maxWaitMs: 60_000 });
    const first = [batcher.submit('act_1'), batcher.submit('act_2')];
    // No wait for the timer: the second submission filled the batch.
    expect(calls).toEqual([['act_1', 'act_2']]);
    const third = batcher.submit('act_3');
    await Promise.all(first);

    await batcher.drain();
    expect(calls).toEqual([['act_1', 'act_2'], ['act_3']]);
    await expect(third).resolves.toMatchObject({ id: 'act_3' });
  });

  it('while maxInFlight batches commit, new ids gather into the next batch', async () => {
    let release = () => {};
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const calls: string[][] = [];
    const apply = async (ids: string[]): Promise<AppliedAction[]> => {
      calls.push(ids);
      if (calls.length === 1) await gate;
      return ids.map((id) => ({
        id,
        status: 'APPLIED' as const,
        unlockedRewardIds: [],
        createdAt: new Date(),
      }));
    };
    const batcher = createActionBatcher({ apply, maxSize: 10, maxWaitMs: 60_000, maxInFlight: 1 });
    const first = batcher.submit('act_1');
    batcher.flush();
    const later = ['act_2', 'act_3'].map((id) => batcher.submit(id));
    batcher.flush();
    expect(calls).toEqual([['act_1']]);

    release();
    await Promise.all([first, ...later]);
    expect(calls).toEqual([['act_1'], ['act_2', 'act_3']]);
  });

  it('when a batch throws, tries each id alone so only the bad one rejects', async () => {
    const { calls, apply } = fakeApply();
    const batchErrors: number[] = [];
    const batcher = createActionBatcher({
      apply,
      maxSize: 10,
      maxWaitMs: 1,
      onBatchError: (_err, size) => batchErrors.push(size),
    });
    const settled = await Promise.allSettled(['act_1', 'act_bad', 'act_3'].map((id) => batcher.submit(id)));

    expect(calls).toEqual([['act_1', 'act_bad', 'act_3'], ['act_1'], ['act_bad'], ['act_3']]);
    expect(batchErrors).toEqual([3]);
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(settled[0]).toMatchObject({ value: { id: 'act_1', status: 'APPLIED' } });
    expect(settled[1]).toMatchObject({ reason: { message: 'cannot apply act_bad' } });
  });

  it('a failing batch of one rejects without a retry', async () => {
    const { calls, apply } = fakeApply();
    const batcher = createActionBatcher({ apply, maxSize: 10, maxWaitMs: 1 });
    await expect(batcher.submit('act_bad')).rejects.toThrow('cannot apply act_bad');
    expect(calls).toEqual([['act_bad']]);
  });
});

describe('worker (real BullMQ, Redis and PostgreSQL)', () => {
  const stack = useTestStack({ worker: false });

  async function acceptOne() {
    const w = await makeWorld(stack.ctx, { reward: { conversionsRequired: 1, isUnlimited: true } });
    const [campaign] = await stack.ctx.db.select().from(campaigns).where(eq(campaigns.id, w.campaign.id));
    const { action } = await acceptLoyaltyAction(stack.ctx, campaign as CampaignRow, {
      rewardId: w.reward.id,
      participant: { email: uniqueEmail(), addIfNoneExists: true, profile: {} },
    });
    return { w, action, participant: { id: action.participantId } };
  }

  const addJob = (jobId: string, data: unknown, opts: { attempts?: number } = {}) =>
    stack.deps.queues.forJob('loyalty-action.apply').add('loyalty-action.apply', data, {
      jobId,
      backoff: { type: 'fixed', delay: 10 },
      ...opts,
    });

  async function finished(jobId: string, state: 'completed' | 'failed' = 'completed') {
    await eventually(
      async () => (await stack.deps.queues.forJob('loyalty-action.apply').getJob(jobId))?.getState(),
      (s) => s === state,
    );
    return (await stack.deps.queues.forJob('loyalty-action.apply').getJob(jobId))!;
  }

  /** The `loyalty-action-batch.apply` job carrying the action, once it completed. */
  async function finishedBatch(actionId: string) {
    await eventually(
      async () => (await actionJob(stack, actionId))?.getState(),
      (s) => s === 'completed',
    );
    return (await actionJob(stack, actionId))!;
  }

  /** `counts` of an action applied once, the only one of its participant and campaign. */
  const APPLIED_ONCE = { participant: 1, rewards: 1, campaign: 1, status: 'APPLIED', appliedEvents: 1 };

  async function counts(campaignId: string, participantId: string, actionId: string) {
    const [p] = await stack.ctx.db.select().from(participants).where(eq(participants.id, participantId));
    const [c] = await stack.ctx.db.select().from(campaigns).where(eq(campaigns.id, campaignId));
    const [a] = await stack.ctx.db.select().from(loyaltyActions).where(eq(loyaltyActions.id, actionId));
    const applied = await stack.ctx.db
      .select()
      .from(events)
      .where(and(eq(events.campaignId, campaignId), eq(events.type, 'LOYALTY_ACTION_APPLIED')));
    return {
      participant: p!.loyaltyActionCount,
      rewards: p!.approvedRewardCount,
      campaign: c!.loyaltyActionCount,
      status: a!.status,
      appliedEvents: applied.length,
    };
  }

  it('a batch that fails on one action is applied again one action at a time: the others commit, the bad one fails with its own error', async () => {
    const [good1, bad, good2] = [await acceptOne(), await acceptOne(), await acceptOne()];
    // A trigger that refuses to apply one action: the batch's transaction fails on it, whoever else is in it.
    const refuse = `refuse_${randomBytes(4).toString('hex')}`;
    await stack.ctx.db.execute(
      sql.raw(`create function ${refuse}() returns trigger language plpgsql as $$
        begin raise exception 'refused %', new.id; end $$;
        create trigger ${refuse} before update on loyalty_actions for each row
          when (new.id = '${bad.action.id}' and new.status = 'APPLIED') execute function ${refuse}()`),
    );
    try {
      const batchErrors: number[] = [];
      const applyCalls: string[][] = [];
      const batcher = createActionBatcher({
        apply: (ids) => {
          applyCalls.push(ids);
          return applyActions(stack.ctx, ids);
        },
        maxSize: 10,
        maxWaitMs: 5,
        onBatchError: (_err, size) => batchErrors.push(size),
      });
      const settled = await Promise.allSettled(
        [good1, bad, good2].map(({ action }) => batcher.submit(action.id)),
      );

      const ids = [good1, bad, good2].map(({ action }) => action.id);
      expect(applyCalls).toEqual([ids, ...ids.map((id) => [id])]);
      expect(batchErrors).toEqual([3]);
      expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
      expect(settled[0]).toMatchObject({ value: { id: good1.action.id, status: 'APPLIED' } });
      expect(settled[2]).toMatchObject({ value: { id: good2.action.id, status: 'APPLIED' } });
      // Its own error: PostgreSQL's raise_exception, naming the bad action.
      const reason = (settled[1] as PromiseRejectedResult).reason;
      expect(pgError(reason)).toMatchObject({ code: 'P0001' });
      expect(String((reason as Error).cause)).toContain(`refused ${bad.action.id}`);
      for (const { w, action, participant } of [good1, good2]) {
        expect(await counts(w.campaign.id, participant.id, action.id)).toEqual(APPLIED_ONCE);
      }
      expect(await counts(bad.w.campaign.id, bad.participant.id, bad.action.id)).toEqual({
        participant: 0,
        rewards: 0,
        campaign: 0,
        status: 'QUEUED',
        appliedEvents: 0,
      });
    } finally {
      await stack.ctx.db.execute(
        sql.raw(`drop trigger ${refuse} on loyalty_actions; drop function ${refuse}()`),
      );
    }
  });

  it('an action enqueued as two jobs (different job ids) is applied once', async () => {
    const { w, action, participant } = await acceptOne();
    await enqueueActions(stack.deps.queues, [action.id]);
    await addJob(`dup-${action.id}`, { actionId: action.id });
    stack.startWorker();

    const [normal, dup] = await Promise.all([finishedBatch(action.id), finished(`dup-${action.id}`)]);
    expect(normal.returnvalue).toMatchObject({ actions: 1 });
    expect(dup.returnvalue).toBeTruthy();
    expect(await counts(w.campaign.id, participant.id, action.id)).toEqual(APPLIED_ONCE);
  });

  it('a job delivered again after its action was applied completes as skipped and changes nothing', async () => {
    stack.startWorker();
    const { w, action, participant } = await acceptOne();
    await enqueueActions(stack.deps.queues, [action.id]);
    const first = await finishedBatch(action.id);
    expect(first.returnvalue).toEqual({ actions: 1, applied: 1 });
    expect(await counts(w.campaign.id, participant.id, action.id)).toMatchObject({
      status: 'APPLIED',
      rewards: 1,
    });

    await addJob(`again-${action.id}`, { actionId: action.id });
    const again = await finished(`again-${action.id}`);
    expect(again.returnvalue).toEqual({ id: action.id, skipped: 'already applied' });
    expect(await counts(w.campaign.id, participant.id, action.id)).toMatchObject({
      participant: 1,
      rewards: 1,
      campaign: 1,
      appliedEvents: 1,
    });
  });

  it('a job with an invalid payload fails at once, without retries', async () => {
    stack.startWorker();
    const tag = randomBytes(4).toString('hex');
    await addJob(`bad-${tag}`, { actionId: `not-an-action-${tag}` }, { attempts: 5 });
    await addJob(`extra-${tag}`, { actionId: `act_${tag}`, extra: true }, { attempts: 5 });

    for (const id of [`bad-${tag}`, `extra-${tag}`]) {
      const job = await finished(id, 'failed');
      expect(job.attemptsMade).toBe(1);
      expect(job.failedReason).toMatch(/^Invalid payload for loyalty-action\.apply: /);
      // The reason names the field, never the value that was sent.
      expect(job.failedReason).not.toContain(tag);
    }
  });

  it('a job whose name is not in the catalog fails at once, without retries', async () => {
    stack.startWorker();
    const id = `unknown-${randomBytes(4).toString('hex')}`;
    await stack.deps.queues
      .forJob('loyalty-action.apply')
      .add('__proto__', { actionId: 'act_x' }, { jobId: id, attempts: 5 });
    const job = await finished(id, 'failed');
    expect(job.attemptsMade).toBe(1);
    expect(job.failedReason).toBe('Unknown job name: not in the job catalog for this process');
  });
});

describe('a job that fails', () => {
  const stack = useTestStack({ worker: false });

  it('keeps no query parameters in Redis: the failed reason is the error class and code', async () => {
    const email = uniqueEmail('private');
    const prefix = uniquePrefix('stampcard_test');
    // A real PostgreSQL error whose query carries an email, as an apply that fails on a participant would.
    const batcher = createActionBatcher({
      apply: async () => {
        await stack.ctx.db.execute(sql`select ${email}::int`);
        return [];
      },
      maxSize: 1,
      maxWaitMs: 1,
    });
    const queueName = JOBS['loyalty-action.apply'].queue;
    const queue = new Queue(queueName, {
      connection: stack.redis,
      prefix: queuePrefix(prefix, queueName, stack.redis),
    });
    const worker = new Worker(
      JOBS['loyalty-action.apply'].queue,
      dispatchByName<'worker'>({
        'loyalty-action.apply': applyLoyaltyAction(batcher),
        'loyalty-action-batch.apply': applyLoyaltyActions(batcher, actionTraces()),
        'participant-erasure.run': async () => undefined,
        'participant-import.run': async () => undefined,
      }),
      {
        connection: duplicateRedis(stack.redis, { maxRetriesPerRequest: null }),
        prefix: queuePrefix(prefix, queueName, stack.redis),
      },
    );
    try {
      await queue.add('loyalty-action.apply', { actionId: 'act_private' }, { attempts: 1 });
      const failed = await eventually(
        () => queue.getFailed(),
        (jobsFailed) => jobsFailed.length === 1,
      );
      const job = failed[0]!;
      expect(job.failedReason).toMatch(/^job failed: .*22P02/);
      expect(JSON.stringify([job.failedReason, job.stacktrace])).not.toContain(email);
    } finally {
      await worker.close();
      await queue.close();
      await deleteRedisKeys(REDIS_URL, prefix);
    }
  });
});
