import type { Logger } from '@stampcard/config';
import {
  type Ctx,
  FAN_OUT_BATCH,
  fanOutEvents,
  findOverdueMessages,
  findStalledBacklogs,
} from '@stampcard/core';
import {
  backlogJobId,
  currentJobName,
  deliveryJobId,
  ensureJobs,
  type JobPayload,
  periodic,
  type Queues,
  scheduleDeliveries,
} from '@stampcard/jobs';

export type SweeperOptions = {
  ctx: Ctx;
  queues: Queues;
  logger: Logger;
  /** Pause between sweeps, in ms (`DISPATCH_SWEEP_MS`). */
  intervalMs: number;
  /** A PENDING message overdue by this much is checked for a live job, in ms. */
  overdueGraceMs: number;
  /** Overdue messages are looked for on every n-th sweep. */
  overdueEvery: number;
};

/** The messages (as `deliveryJobId`s) of every `webhook-message-batch.deliver` job waiting or running. */
async function messagesInBatchJobs(queues: Queues): Promise<Set<string>> {
  const jobs = await queues
    .forJob('webhook-message-batch.deliver')
    .getJobs(['waiting', 'prioritized', 'active', 'delayed']);
  const ids = new Set<string>();
  for (const job of jobs) {
    if (!job || currentJobName(job.name) !== 'webhook-message-batch.deliver') continue;
    const data = job.data as JobPayload<'webhook-message-batch.deliver'>;
    for (const m of data.messages ?? []) ids.add(deliveryJobId(m));
  }
  return ids;
}

/**
 * What makes the outbox lossless: every sweep fans out the events nobody pushed to the dispatcher (those the
 * API writes, or a worker's whose push failed), and every few sweeps makes sure each overdue PENDING message
 * of an enabled endpoint has a live delivery job (Redis lost it, or a process died between commit and
 * enqueue), and that each backlog operation still running has the job of its next batch. Answers what it did.
 */
export function createSweeper(opts: SweeperOptions) {
  let round = 0;
  async function sweep() {
    let events = 0;
    let scheduled = 0;
    for (;;) {
      const batch = await fanOutEvents(opts.ctx);
      await scheduleDeliveries(opts.queues, batch.scheduled);
      events += batch.events;
      scheduled += batch.scheduled.length;
      if (batch.events < FAN_OUT_BATCH) break;
    }
    let requeued = 0;
    let resumed = 0;
    if (round++ % opts.overdueEvery === 0) {
      const overdue = await findOverdueMessages(opts.ctx, opts.overdueGraceMs);
      // A message still waiting in a batch job (a backlog) is not lost: only the others get a job of their own.
      const inBatches = overdue.length > 0 ? await messagesInBatchJobs(opts.queues) : new Set<string>();
      ({ added: requeued } = await ensureJobs(
        opts.queues,
        'webhook-message.deliver',
        overdue
          .filter((m) => !inBatches.has(deliveryJobId(m)))
          .map((m) => ({ payload: m, jobId: deliveryJobId(m) })),
      ));
      if (requeued > 0) opts.logger.warn({ requeued }, 'sweep put webhook messages back in the queue');
      // A backlog operation whose next batch has not run for a while may have lost its job: make sure it has one.
      const stalled = await findStalledBacklogs(opts.ctx, opts.overdueGraceMs);
      ({ added: resumed } = await ensureJobs(
        opts.queues,
        'webhook-backlog.run',
        stalled.map((step) => ({ payload: step, jobId: backlogJobId(step) })),
      ));
      if (resumed > 0) opts.logger.warn({ resumed }, 'sweep resumed webhook backlog operations');
    }
    return { events, scheduled, requeued, resumed };
  }
  return periodic(sweep, opts.intervalMs, (err) => opts.logger.error({ err }, 'dispatch sweep failed'));
}
