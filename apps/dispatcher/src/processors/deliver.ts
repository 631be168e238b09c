import type { Logger } from '@stampcard/config';
import { type Ctx, type DeliveryPolicy, recordAttempt } from '@stampcard/core';
import { enqueue, type Processor, type Queues } from '@stampcard/jobs';
import { signatureHeaders } from '@stampcard/webhooks';
import { DelayedError, type Job, UnrecoverableError } from 'bullmq';
import type { DeliveryBatching } from '../batching';
import type { Sender } from '../http';
import type { createInFlight, EndpointGate } from '../throttle';

export type DeliverDeps = {
  ctx: Ctx;
  queues: Queues;
  logger: Logger;
  sender: Sender;
  gate: EndpointGate;
  inFlight: ReturnType<typeof createInFlight>;
  /** Reads and success writes shared with the jobs running at the same moment. */
  batching: DeliveryBatching;
  policy: Omit<DeliveryPolicy, 'random'>;
};

/** A rate-limit wait this short is slept in place; a longer one puts the job back until its slot. */
const SLEEP_IN_PLACE_MS = 250;
/** How long a job waits in place for its endpoint's in-flight window before stepping aside. */
const WINDOW_WAIT_MS = 50;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Puts the job back in the queue for `ms` without spending one of BullMQ's attempts. */
async function later(job: Job, token: string | undefined, ms: number): Promise<never> {
  await job.moveToDelayed(Date.now() + Math.max(0, ms), token);
  throw new DelayedError();
}

/**
 * `webhook-message.deliver`: one attempt of a message, when it is due, its endpoint has a free slot in this
 * process and the endpoint's shared gate (rate limit, Retry-After pause) lets it through. The attempt is
 * signed with every current secret, recorded, and the job is delayed to the next attempt when the message
 * is retried: the message's schedule lives in PostgreSQL, the job only carries it out.
 */
export function deliverMessage(deps: DeliverDeps): Processor<'webhook-message.deliver'> {
  const { ctx, sender, gate, inFlight, batching } = deps;
  return async ({ messageId, generation }, job, token) => {
    const delivery = await batching.load({ messageId, generation });
    if ('skip' in delivery) return { messageId, skipped: delivery.skip };
    const { endpoint, message } = delivery;
    const notYet = message.nextAttemptAt.getTime() - ctx.clock.now().getTime();
    if (notYet > 20) return later(job, token, notYet);
    if (!(await inFlight.acquire(endpoint.id, WINDOW_WAIT_MS))) {
      // A healthy endpoint that is merely busy frees a slot within milliseconds: come back soon. One whose
      // window timeouts narrowed is slow: come back much later, leaving the process's slots to the others.
      const back = inFlight.narrowed(endpoint.id) ? 250 + Math.random() * 750 : 10 + Math.random() * 40;
      return later(job, token, back);
    }
    let answered = true;
    try {
      let wait = await gate.wait(endpoint.id, endpoint.rateLimit);
      while (wait > 0 && wait <= SLEEP_IN_PLACE_MS) {
        await sleep(wait);
        wait = await gate.wait(endpoint.id, endpoint.rateLimit);
      }
      if (wait > 0) return await later(job, token, wait + Math.random() * 50);

      const headers = signatureHeaders({
        id: message.id,
        timestamp: Math.floor(Date.now() / 1000),
        body: delivery.body,
        secrets: delivery.secrets,
      });
      // The outbox event's id too, so a receiver can match a delivery with the event feed.
      const sent: Record<string, string> = { ...headers };
      if (message.eventId) sent['stampcard-event-id'] = message.eventId;
      const attemptedAt = ctx.clock.now();
      const result = await sender.send(endpoint.url, sent, delivery.body);
      answered = result.statusCode !== null;
      const outcome = await recordAttempt(
        ctx,
        delivery,
        { ...result, attemptedAt },
        { ...deps.policy, random: Math.random() },
        batching.writeSuccess,
      );
      if (outcome.eventIds.length > 0) {
        await enqueue(deps.queues, 'webhook-events.fan-out', [
          { payload: { eventIds: outcome.eventIds } },
        ]).catch((err) => deps.logger.warn({ err }, 'events left to the dispatcher sweep'));
      }
      if (outcome.next === 'RETRY') {
        const ms = outcome.at.getTime() - ctx.clock.now().getTime();
        if (outcome.throttled) await gate.pause(endpoint.id, ms);
        return await later(job, token, ms);
      }
      if (outcome.next === 'HELD') {
        deps.logger.warn(
          { endpointId: endpoint.id, messageId },
          'webhook endpoint disabled; its messages are kept',
        );
        return { messageId, held: true };
      }
      if (outcome.status === 'FAILED') {
        // The dead letter shows on the dashboard as a failed job; the message stays replayable.
        throw new UnrecoverableError(`webhook message dead-lettered after ${message.attempts + 1} attempts`);
      }
      return { messageId, status: outcome.status, statusCode: result.statusCode };
    } finally {
      inFlight.release(endpoint.id, answered);
    }
  };
}
