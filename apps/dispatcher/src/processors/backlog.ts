import type { Logger } from '@stampcard/config';
import { type Ctx, runBacklogStep } from '@stampcard/core';
import { enqueueBacklogSteps, type Processor, type Queues, scheduleDeliveries } from '@stampcard/jobs';

/**
 * `webhook-backlog.run`: one bounded batch of an endpoint's backlog operation (one statement over at most `limit`
 * messages, committed; halved when it runs into the statement timeout), then one bulk enqueue of the messages it
 * released, then the job of the next batch. A crash after the commit leaves the released messages to the sweep's
 * overdue check and the next batch to its backlog check; the job itself, run again, finds its batch done and
 * does nothing.
 */
export function runBacklog(
  ctx: Ctx,
  queues: Queues,
  logger: Logger,
  limit: number,
): Processor<'webhook-backlog.run'> {
  return async (step) => {
    const batch = await runBacklogStep(ctx, step, limit);
    if (!batch.ran) return { ran: false, handled: 0 };
    if (batch.size < limit) {
      logger.warn(
        { ...step, size: batch.size },
        'webhook backlog batch halved: it ran into the statement timeout',
      );
    }
    await scheduleDeliveries(queues, batch.scheduled);
    if (batch.next) await enqueueBacklogSteps(queues, [batch.next]);
    else logger.info({ ...step, batches: step.batch + 1 }, 'webhook backlog operation finished');
    return { ran: true, handled: batch.handled };
  };
}
