import { loadDeliveries } from '@stampcard/core';
import { deferDeliveries, type JobPayload, type Processor } from '@stampcard/jobs';
import { UnrecoverableError } from 'bullmq';
import { type DeliverDeps, later, tracedAttempt, WINDOW_WAIT_MS } from './attempt';

/** A message whose attempt threw (a store failing) is tried again as its own job after this long, in ms. */
const AFTER_ERROR_MS = 1000;

/**
 * Batch jobs of one endpoint that run at once in a process (`createBatchLanes`): two keep its window full (64
 * messages each, against a window of `WEBHOOK_ENDPOINT_CONCURRENCY`, 32) while the first one's last answers come
 * back.
 */
export const BATCH_LANES = 2;

/**
 * How long a message of a batch waits for a slot of its endpoint's window, when the endpoint is healthy (its
 * window whole), in ms: the batch's own deliveries free them as their answers come, and with the lanes
 * bounded the job slot held meanwhile is not taken from other endpoints. A slow endpoint's (its window
 * narrowed by timeouts) wait `WINDOW_WAIT_MS`, then step aside.
 */
const BATCH_WINDOW_WAIT_MS = 2000;

/**
 * `webhook-message-batch.deliver`: the first attempt of new messages of one endpoint, together: one read for
 * all, their attempts side by side within the endpoint's share of this process, their successes written
 * together. A message that cannot be sent now, or whose attempt is to be retried (or threw), goes on as its own
 * `webhook-message.deliver` job, due when it should come back. Run again (a dispatcher died mid-job), the job
 * skips what was recorded and sends the rest: at least once.
 */
export function deliverMessages(deps: DeliverDeps): Processor<'webhook-message-batch.deliver'> {
  return async ({ endpointId, messages }, job, token) => {
    const leave = deps.lanes.enter(endpointId);
    // Jittered, so that the jobs turned away together do not all come back together.
    if (!leave) return later(job, token, deps.lanes.comeBackMs(endpointId) * (1 + Math.random()));
    try {
      return await deliverBatch(deps, endpointId, messages);
    } finally {
      leave();
    }
  };
}

type BatchMessage = JobPayload<'webhook-message-batch.deliver'>['messages'][number];

async function deliverBatch(deps: DeliverDeps, endpointId: string, messages: BatchMessage[]) {
  const windowWaitMs = deps.inFlight.narrowed(endpointId) ? WINDOW_WAIT_MS : BATCH_WINDOW_WAIT_MS;
  const deliveries = await loadDeliveries(deps.ctx, messages);
  const deferred: { messageId: string; generation: number; delayMs: number; traceparent?: string }[] = [];
  let delivered = 0;
  let deadLettered = 0;
  await Promise.all(
    deliveries.map(async (delivery, i) => {
      if ('skip' in delivery) return;
      const step = await tracedAttempt(deps, delivery, messages[i]!.traceparent, windowWaitMs).catch(
        (err: unknown) => {
          deps.logger.warn({ err, messageId: delivery.message.id }, 'delivery attempt failed; retried alone');
          return { later: AFTER_ERROR_MS };
        },
      );
      if ('later' in step) deferred.push({ ...messages[i]!, delayMs: step.later });
      else if (step.done === 'FAILED') deadLettered += 1;
      else if (step.done === 'SUCCEEDED') delivered += 1;
    }),
  );
  await deferDeliveries(deps.queues, deferred);
  if (deadLettered > 0) {
    // Only with an empty retry schedule can a first attempt be the last: show it as a failed job.
    throw new UnrecoverableError(`${deadLettered} webhook message(s) dead-lettered after their only attempt`);
  }
  return { messages: messages.length, delivered, deferred: deferred.length };
}
