import { runBacklogStep } from '@stampcard/core';
import { webhookMessages } from '@stampcard/db';
import { JOBS, type JobPayload, queuePrefix } from '@stampcard/jobs';
import { Queue } from 'bullmq';
import { and, eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { client, overHttp } from '../../../test/support/client';
import { useReceivers } from '../../../test/support/receiver';
import { OPERATOR_TOKEN } from '../../../test/support/stack';
import { useTestStack } from '../../../test/support/use';
import { backlogWhenEnded, heldEndpoint, messageCounts } from '../../../test/support/webhooks';

/**
 * Large backlogs: an endpoint that held tens of thousands of messages while disabled is enabled over HTTP. The
 * API answers at once with what it will do, queues one batch, and the dispatcher releases the rest a batch per
 * job; the state is in PostgreSQL, so a lost job is resumed.
 */
const BATCH = 1000;
const stack = useTestStack({ http: true, worker: false, dispatcher: false, backlogBatch: BATCH });
const receiver = useReceivers();

const operator = () => client(overHttp(stack.baseUrl!), OPERATOR_TOKEN);
const endpointPath = (id: string) => `/admin/v1/webhook-endpoints/${id}`;

/**
 * `use` on a queue of the stack, on its consumer connection: reading hundreds of jobs back may take longer than
 * the 2 s the request path's connection allows a command.
 */
async function onQueue<T>(
  name: 'webhook-backlog.run' | 'webhook-message-batch.deliver',
  use: (q: Queue) => Promise<T>,
) {
  const queue = JOBS[name].queue;
  const q = new Queue(queue, {
    connection: stack.redis,
    prefix: queuePrefix(stack.prefix, queue, stack.redis),
  });
  try {
    return await use(q);
  } finally {
    await q.close();
  }
}

describe('an endpoint with a large backlog', () => {
  it('enabling releases ~50,000 held messages in the background: the API answers at once and queues one batch', {
    timeout: 120_000,
  }, async () => {
    await stack.stopDispatcher();
    const rx = await receiver();
    const total = 50_000;
    const ep = await heldEndpoint(stack, total, rx.url);

    const enabled = await operator().patch(endpointPath(ep.id), { enabled: true });
    expect(enabled.status, JSON.stringify(enabled.body)).toBe(200);
    expect(enabled.body).toMatchObject({
      enabled: true,
      released: total,
      backlog: { kind: 'RELEASE', state: 'RUNNING', total, done: BATCH, finishedAt: null },
    });
    // The API queued the first batch only (in jobs of 64), and the job of the next batch: never the backlog.
    const deliveries = await onQueue('webhook-message-batch.deliver', (q) =>
      q.getJobs(['waiting', 'prioritized', 'delayed']),
    );
    const sizes = deliveries.map(
      (j) => (j.data as JobPayload<'webhook-message-batch.deliver'>).messages.length,
    );
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(BATCH);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(64);
    const steps = await onQueue('webhook-backlog.run', (q) =>
      q.getJobs(['waiting', 'prioritized', 'delayed']),
    );
    expect(steps.map((j) => j.data)).toEqual([{ endpointId: ep.id, operation: 1, batch: 1 }]);
    expect(await messageCounts(stack, ep.id)).toEqual({ 'PENDING@0': total - BATCH, 'PENDING@1': BATCH });

    // The dispatcher releases the rest, a batch per job, and the endpoint shows it until DONE.
    stack.startDispatcher();
    const done = await backlogWhenEnded(operator(), ep.id);
    expect(done).toMatchObject({ kind: 'RELEASE', state: 'DONE', total, done: total });
    const ran = await onQueue('webhook-backlog.run', (q) => q.getJobs(['completed']));
    const handled = ran.filter(Boolean).map((j) => (j.returnvalue as { handled: number }).handled);
    expect(Math.max(...handled)).toBeLessThanOrEqual(BATCH);
    expect(handled.reduce((a, b) => a + b, 0)).toBe(total - BATCH);
    expect(handled.length).toBeGreaterThanOrEqual((total - BATCH) / BATCH);
    // Every message was released once (a new generation) and queued once, in delivery jobs of at most 64.
    const counts = await messageCounts(stack, ep.id);
    expect(Object.keys(counts).every((k) => k.endsWith('@1'))).toBe(true);
    expect(Object.values(counts).reduce((a, b) => a + b, 0)).toBe(total);
    // Each is in a delivery job still to run, or already delivered (Redis first: a job that finishes in between
    // has recorded its success before).
    const live = await onQueue('webhook-message-batch.deliver', (q) =>
      q.getJobs(['waiting', 'prioritized', 'delayed', 'active']),
    );
    const queued = live
      .filter(Boolean)
      .flatMap((j) =>
        j.name === 'webhook-message-batch.deliver'
          ? (j.data as JobPayload<'webhook-message-batch.deliver'>).messages
          : [j.data as JobPayload<'webhook-message.deliver'>],
      );
    expect(queued.every((m) => m.generation === 1)).toBe(true);
    const delivered = await stack.ctx.db
      .select({ id: webhookMessages.id })
      .from(webhookMessages)
      .where(and(eq(webhookMessages.endpointId, ep.id), eq(webhookMessages.status, 'SUCCEEDED')));
    expect(new Set([...queued.map((m) => m.messageId), ...delivered.map((m) => m.id)]).size).toBe(total);
    // And they are being delivered to the receiver.
    const got = await rx.waitFor(500, 20_000);
    expect(got.every((r) => String(r.headers['webhook-id']).startsWith(`msg_${ep.id}_`))).toBe(true);
    // (The rest would take a while to deliver here: hold them.)
    expect((await operator().patch(endpointPath(ep.id), { enabled: false })).status).toBe(200);
  });

  it('a release resumes after its job was lost; disabling ends it, enabling again starts a new one', async () => {
    await stack.stopDispatcher();
    const ep = await heldEndpoint(stack, 5 * BATCH);
    const op = operator();
    expect((await op.patch(endpointPath(ep.id), { enabled: true })).body.backlog).toMatchObject({
      state: 'RUNNING',
      done: BATCH,
    });
    // Redis loses the next batch's job (or the API died before queueing it).
    await onQueue('webhook-backlog.run', (q) => q.obliterate({ force: true }));
    const dispatcher = stack.startDispatcher();
    expect((await dispatcher.sweeper.runOnce()).resumed).toBeGreaterThanOrEqual(1);
    expect(await backlogWhenEnded(operator(), ep.id)).toMatchObject({
      state: 'DONE',
      total: 5 * BATCH,
      done: 5 * BATCH,
    });
    // A batch's job run again (or late) does nothing.
    expect(
      await runBacklogStep(stack.ctx, { endpointId: ep.id, operation: 1, batch: 1 }, BATCH),
    ).toMatchObject({
      ran: false,
    });

    // Disabling during a release ends it: what is left stays held until the next enable releases it.
    await op.patch(endpointPath(ep.id), { enabled: false });
    await stack.stopDispatcher();
    const second = await op.patch(endpointPath(ep.id), { enabled: true });
    expect(second.body).toMatchObject({ released: 5 * BATCH, backlog: { state: 'RUNNING', done: BATCH } });
    const disabled = await op.patch(endpointPath(ep.id), { enabled: false });
    expect(disabled.body.backlog).toMatchObject({ kind: 'RELEASE', state: 'CANCELLED', done: BATCH });
    stack.startDispatcher();
    const third = await op.patch(endpointPath(ep.id), { enabled: true });
    expect(third.body).toMatchObject({ released: 5 * BATCH, backlog: { state: 'RUNNING' } });
    expect(await backlogWhenEnded(operator(), ep.id)).toMatchObject({ state: 'DONE', done: 5 * BATCH });
    await op.patch(endpointPath(ep.id), { enabled: false });
  });
});
