import { loadAndClaimDeliveries, loadDeliveries } from '@stampcard/core';
import { DELIVERY_BATCH, deferDeliveries, type JobPayload, type Processor } from '@stampcard/jobs';
import { UnrecoverableError } from 'bullmq';
import { BATCH_WINDOW_WAIT_MS } from '../batching';
import type { LaneRoom } from '../throttle';
import { type DeliverDeps, later, tracedAttempt, WINDOW_WAIT_MS } from './attempt';

/** A message whose attempt threw (a store failing) is tried again as its own job after this long, in ms. */
const AFTER_ERROR_MS = 1000;

/**
 * Messages of one endpoint that batch jobs hold at once in a dispatcher process (`createBatchLanes`): two full
 * batches keep its window full (`WEBHOOK_ENDPOINT_CONCURRENCY`, 32) while the first one's last answers come back.
 */
export const BATCH_LANE_MESSAGES = 2 * DELIVERY_BATCH;

/**
 * How long a batch job waits in place for room in its endpoint's lane before it steps aside, in ms (while fewer
 * than `laneWaitersMax` jobs of the process wait): a healthy endpoint's lane makes room for the next batch every
 * few tens of ms.
 */
export const LANE_WAIT_MS = 2000;

/**
 * The jobs of a dispatcher of `concurrency` job slots that may wait in place for their endpoint's lane at once:
 * all but a quarter of the slots (at least 4), which go on taking other endpoints' jobs meanwhile.
 */
export const laneWaitersMax = (concurrency: number) =>
  Math.max(0, concurrency - Math.max(4, Math.ceil(concurrency / 4)));

/**
 * `webhook-message-batch.deliver`: the first attempt of new messages of one endpoint, together: one read for
 * all that claims them as it reads (`loadAndClaim`), their attempts side by side within the endpoint's share of this
 * process, their successes written together. While the endpoint's other batch jobs in this process hold `BATCH_LANE_MESSAGES` messages not yet
 * done with, the job waits in place for room (`LANE_WAIT_MS`), then steps aside whole, before its read
 * (`createBatchLanes`). A message that cannot be sent now, or whose attempt is to be retried (or threw), goes on
 * as its own `webhook-message.deliver` job, due when it should come back. Run again (a dispatcher died mid-job),
 * the job skips what was recorded and sends the rest: at least once.
 */
export function deliverMessages(deps: DeliverDeps): Processor<'webhook-message-batch.deliver'> {
  return async ({ endpointId, messages }, job, token) => {
    const room = await deps.lanes.admit(endpointId, messages.length, LANE_WAIT_MS);
    if (!room) {
      deps.metrics?.batchSteppedAside();
      return later(job, token, deps.lanes.comeBackMs(endpointId, messages.length));
    }
    try {
      return await deliverBatch(deps, endpointId, messages, room);
    } finally {
      room.close();
    }
  };
}

type BatchMessage = JobPayload<'webhook-message-batch.deliver'>['messages'][number];

/**
 * The messages of a batch (of one, too) to a healthy endpoint, loaded and claimed together
 * (`loadAndClaimDeliveries`), before they wait for its window: one round trip, and no slot of the window held
 * through a claim's (which took as long as the request itself in a replay). Per delivery: claimed (true), or left
 * for its attempt to claim (undefined): skipped, not due, held by another delivery, every message of an endpoint
 * that is rate-limited (its turn may be far off), or of one that is slow (`claim` false: its window narrowed,
 * its messages soon step aside), or of a load whose claim failed (loaded again without it).
 */
export async function loadAndClaim(
  deps: DeliverDeps,
  messages: readonly BatchMessage[],
  claim: boolean,
): Promise<{ deliveries: Awaited<ReturnType<typeof loadDeliveries>>; claimed: (true | undefined)[] }> {
  if (!claim) return { deliveries: await loadDeliveries(deps.ctx, messages), claimed: [] };
  try {
    return await loadAndClaimDeliveries(deps.ctx, messages, deps.batching.leaseMs);
  } catch (err) {
    // A claim that failed (a deadlock with a statement that locks some of the messages in another order) leaves
    // each message to its attempt, which claims it alone.
    deps.logger.warn(
      { err, messages: messages.length },
      'claim of a batch failed; its messages are claimed one by one',
    );
    return { deliveries: await loadDeliveries(deps.ctx, messages), claimed: [] };
  }
}

async function deliverBatch(deps: DeliverDeps, endpointId: string, messages: BatchMessage[], room: LaneRoom) {
  const healthy = !deps.inFlight.narrowed(endpointId);
  const windowWaitMs = messages.length > 1 && healthy ? BATCH_WINDOW_WAIT_MS : WINDOW_WAIT_MS;
  const { deliveries, claimed } = await loadAndClaim(deps, messages, healthy);
  const deferred: { messageId: string; generation: number; delayMs: number; traceparent?: string }[] = [];
  let delivered = 0;
  let deadLettered = 0;
  await Promise.all(
    deliveries.map(async (delivery, i) => {
      if ('skip' in delivery) return room.free();
      const attempt = tracedAttempt(
        deps,
        delivery,
        messages[i]!.traceparent,
        windowWaitMs,
        claimed[i] === true,
      );
      const step = await attempt
        .catch((err: unknown) => {
          deps.logger.warn({ err, messageId: delivery.message.id }, 'delivery attempt failed; retried alone');
          return { later: AFTER_ERROR_MS };
        })
        .finally(room.free);
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
