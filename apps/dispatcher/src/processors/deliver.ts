import type { Processor } from '@stampcard/jobs';
import { UnrecoverableError } from 'bullmq';
import { type DeliverDeps, later, tracedAttempt } from './attempt';

export type { DeliverDeps } from './attempt';

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
