import type { Processor } from '@stampcard/jobs';
import { DelayedError, type Job, UnrecoverableError } from 'bullmq';
import { type DeliverDeps, tracedAttempt } from './attempt';

export type { DeliverDeps } from './attempt';

/** Puts the job back in the queue for `ms` without spending one of BullMQ's attempts. */
async function later(job: Job, token: string | undefined, ms: number): Promise<never> {
  await job.moveToDelayed(Date.now() + Math.max(0, ms), token);
  throw new DelayedError();
}

/**
 * `webhook-message.deliver`: one message's next attempt (`attemptDelivery`). The job is delayed to the next
 * attempt when the message is retried or cannot be sent yet, and fails for good (the dead letter on the
 * dashboard) when its schedule is spent.
 */
export function deliverMessage(deps: DeliverDeps): Processor<'webhook-message.deliver'> {
  return async ({ messageId, generation, traceparent }, job, token) => {
    const delivery = await deps.batching.load({ messageId, generation });
    if ('skip' in delivery) return { messageId, skipped: delivery.skip };
    const step = await tracedAttempt(deps, delivery, traceparent);
    if ('later' in step) return later(job, token, step.later);
    if (step.done === 'FAILED') {
      throw new UnrecoverableError(
        `webhook message dead-lettered after ${delivery.message.attempts + 1} attempts`,
      );
    }
    return { messageId, status: step.done, statusCode: step.statusCode };
  };
}
