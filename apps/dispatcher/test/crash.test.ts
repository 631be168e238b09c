import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { updateCampaign } from '@stampcard/core';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { eventually } from '../../../test/support/client';
import { FROM_SOURCE } from '../../../test/support/processes';
import { startReceiver } from '../../../test/support/receiver';
import { useTestStack } from '../../../test/support/use';
import { goalWorld, messagesOf, registerEndpoint } from '../../../test/support/webhooks';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const LOCK_MS = 2000;

const stack = useTestStack({ dispatcher: false, lockMs: LOCK_MS, retrySchedule: '50' });

/**
 * An action whose message to a new endpoint at `url` waits in its batch job: deliveries are paused (the test
 * resumes them), so the fan-out makes the message and the job, which nobody takes yet.
 */
async function heldBatchJob(url: string) {
  const w = await goalWorld(stack);
  const ep = await registerEndpoint(stack, w.campaign.id, { url, eventTypes: ['LOYALTY_ACTION_APPLIED'] });
  const deliveries = stack.deps.queues.forJob('webhook-message-batch.deliver');
  await deliveries.pause();
  await w.act();
  const waiting = await eventually(
    () => deliveries.getWaiting(),
    (jobs) => jobs.some((j) => j.data.endpointId === ep.id),
  );
  return { ep, waiting };
}

describe('a dispatcher killed mid-delivery', () => {
  it('another dispatcher delivers the message again: same id, at least once, never after the success', async () => {
    // The first request is held open, as by a receiver still working when the dispatcher dies.
    const rx = await startReceiver((_r, n) => (n === 0 ? { hang: true } : {}));
    try {
      const w = await goalWorld(stack);
      const ep = await registerEndpoint(stack, w.campaign.id, {
        url: rx.url,
        eventTypes: ['PARTICIPANT_REACHED_A_GOAL'],
      });
      await w.act();
      const child = spawn(process.execPath, [...FROM_SOURCE, 'scripts/start.ts', 'dispatcher'], {
        cwd: ROOT,
        env: {
          ...process.env,
          ...stack.storeEnv,
          WORKER_LOCK_MS: String(LOCK_MS),
          WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
          // Its claim on the message holds the timeout and 5 s: the next dispatcher sends once it is over.
          WEBHOOK_TIMEOUT_MS: '3000',
          LOG_LEVEL: 'silent',
        },
        stdio: 'ignore',
      });
      const exited = new Promise((resolve) => child.on('exit', resolve));
      try {
        await rx.waitFor(1, 20_000);
      } finally {
        child.kill('SIGKILL');
        await exited;
      }
      const [inFlight] = await messagesOf(stack, ep.id);
      expect(inFlight).toMatchObject({ status: 'PENDING', attempts: 0 });

      stack.startDispatcher();
      const [done] = await eventually(
        () => messagesOf(stack, ep.id),
        (ms) => ms[0]?.status === 'SUCCEEDED',
        20_000,
      );
      expect(done.attemptLog).toHaveLength(1);
      await new Promise((r) => setTimeout(r, LOCK_MS));
      expect(rx.received).toHaveLength(2);
      expect(rx.received.map((r) => r.headers['webhook-id'])).toEqual([done.id, done.id]);
    } finally {
      await rx.close();
    }
  });

  it('the sweep fans out events nobody pushed, and re-queues messages whose job Redis lost', async () => {
    const rx = await startReceiver();
    try {
      const dispatcher = stack.dispatcher ?? stack.startDispatcher();
      const w = await goalWorld(stack);
      const ep = await registerEndpoint(stack, w.campaign.id, { url: rx.url });
      // The flow's writers push their events: NEW_PARTICIPANT_ADDED (the API), the worker's two.
      await w.act();
      await rx.waitFor(3);
      expect(rx.received.map((r) => r.json.type).sort()).toEqual([
        'LOYALTY_ACTION_APPLIED',
        'NEW_PARTICIPANT_ADDED',
        'PARTICIPANT_REACHED_A_GOAL',
      ]);
      // A write whose hand-off is lost (here: core called with a ctx that has no `afterCommit`) pushes nothing:
      // only the sweep hands its event to the dispatcher.
      await updateCampaign(stack.ctx, w.campaign.id, { status: 'COMPLETE' });
      await new Promise((r) => setTimeout(r, 200));
      expect(rx.received).toHaveLength(3);
      const swept = await dispatcher.sweeper.runOnce();
      expect(swept.events).toBe(1);
      await rx.waitFor(4);
      expect(rx.received[3]!.json.type).toBe('CAMPAIGN_ENDED');

      // Messages whose jobs are gone: PENDING and due in PostgreSQL, absent from Redis. (Once their successes are
      // recorded: a record of a generation replayed meanwhile does not end the attempt's claim, and the replay
      // waits for the claim's lease, longer than this test waits.)
      await eventually(
        () => messagesOf(stack, ep.id),
        (ms) => ms.length === 4 && ms.every((m: { status: string }) => m.status === 'SUCCEEDED'),
      );
      await stack.ctx.db.execute(
        sql`update webhook_messages set status = 'PENDING', generation = generation + 1 where endpoint_id = ${ep.id}`,
      );
      const next = await dispatcher.sweeper.runOnce();
      expect(next.requeued).toBe(4);
      await rx.waitFor(8);
      expect(new Set(rx.received.slice(4).map((r) => r.headers['webhook-id']))).toEqual(
        new Set(rx.received.slice(0, 4).map((r) => r.headers['webhook-id'])),
      );
    } finally {
      await rx.close();
    }
  });
  it('a delivery job run twice at once (its lock lost while it ran) sends its message once: the claim in PostgreSQL holds the second back', async () => {
    const rx = await startReceiver(() => ({ delayMs: 500 }));
    const deliveries = stack.deps.queues.forJob('webhook-message-batch.deliver');
    try {
      stack.dispatcher ?? stack.startDispatcher();
      const { ep, waiting } = await heldBatchJob(rx.url);
      const job = waiting.find((j) => j.data.endpointId === ep.id);
      // The same job's work twice in the queue: both taken at once, as after a lock lost mid-run.
      await deliveries.add(job!.name, job!.data);
      await deliveries.resume();
      await rx.waitFor(1);
      const [done] = await eventually(
        () => messagesOf(stack, ep.id),
        (ms) => ms[0]?.status === 'SUCCEEDED',
      );
      // The second run found the message claimed and comes back 1 to 2 s later, to find it delivered.
      await new Promise((r) => setTimeout(r, 3000));
      expect(rx.received.map((r) => r.headers['webhook-id'])).toEqual([done.id]);
      expect(done.attemptLog).toHaveLength(1);
    } finally {
      await deliveries.resume();
      await rx.close();
    }
  });

  it('the sweep leaves alone overdue messages still waiting in a batch job, and re-queues them once that job is gone', async () => {
    const rx = await startReceiver();
    const deliveries = stack.deps.queues.forJob('webhook-message-batch.deliver');
    try {
      const dispatcher = stack.dispatcher ?? stack.startDispatcher();
      const { waiting } = await heldBatchJob(rx.url);
      // Overdue (no grace in tests), but not lost: its batch job is still there.
      expect((await dispatcher.sweeper.runOnce()).requeued).toBe(0);
      for (const job of waiting) await job.remove();
      expect((await dispatcher.sweeper.runOnce()).requeued).toBe(1);
      await deliveries.resume();
      await rx.waitFor(1);
      expect(rx.received).toHaveLength(1);
    } finally {
      await deliveries.resume();
      await rx.close();
    }
  });
});
