import type { Logger } from '@stampcard/config';
import { type Ctx, type Delivery, type DeliveryPolicy, judgeAttempt, recordAttempt } from '@stampcard/core';
import type { Queues } from '@stampcard/jobs';
import { signatureHeaders } from '@stampcard/webhooks';
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

/** A rate-limit wait this short is slept in place; a longer one puts the message back until its slot. */
const SLEEP_IN_PLACE_MS = 250;
/** How long a message waits in place for its endpoint's in-flight window before stepping aside. */
const WINDOW_WAIT_MS = 50;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** What became of one attempt, for the job that carries the message. */
export type AttemptStep =
  /** Nothing to do now: try again in `ms` (not due yet, endpoint busy or throttled, or a retry). */
  | { later: number }
  /** Delivered, or held because the attempt disabled the endpoint. */
  | { done: 'SUCCEEDED' | 'HELD'; statusCode: number | null }
  /** Every attempt of the schedule failed: the message is dead-lettered (FAILED, replayable). */
  | { done: 'FAILED'; statusCode: number | null };

/**
 * One attempt of a loaded message, when it is due, its endpoint has a free slot in this process and the
 * endpoint's shared gate (rate limit, Retry-After pause) lets it through. The attempt is signed with every
 * current secret and recorded; the message's schedule lives in PostgreSQL, and the answer says when the job
 * carrying it should come back.
 */
export async function attemptDelivery(deps: DeliverDeps, delivery: Delivery): Promise<AttemptStep> {
  const { ctx, sender, gate, inFlight, batching } = deps;
  const { endpoint, message } = delivery;
  const notYet = message.nextAttemptAt.getTime() - ctx.clock.now().getTime();
  if (notYet > 20) return { later: notYet };
  if (!(await inFlight.acquire(endpoint.id, WINDOW_WAIT_MS))) {
    // A healthy endpoint that is merely busy frees a slot within milliseconds: come back soon. One whose
    // window timeouts narrowed is slow: come back much later, leaving the process's slots to the others.
    return { later: inFlight.narrowed(endpoint.id) ? 250 + Math.random() * 750 : 10 + Math.random() * 40 };
  }
  // Null until a request is sent: a delivery that steps aside leaves the endpoint's window as it is.
  let answered: boolean | null = null;
  let released = false;
  try {
    let wait = await gate.wait(endpoint.id, endpoint.rateLimit);
    while (wait > 0 && wait <= SLEEP_IN_PLACE_MS) {
      await sleep(wait);
      wait = await gate.wait(endpoint.id, endpoint.rateLimit);
    }
    if (wait > 0) return { later: wait + Math.random() * 50 };

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
    if (judgeAttempt(result.statusCode, result.retryAfter, attemptedAt).kind === 'THROTTLED') {
      // Held at once for the floor, while the answer is recorded (which says for how long): the deliveries of
      // this process on their way to the endpoint step aside instead of being throttled in turn. The slot is
      // kept until then, and the window drops to one: when the pause is over one delivery tries the endpoint.
      inFlight.throttled(endpoint.id);
      await gate.pause(endpoint.id, deps.policy.throttle.floorMs);
    } else {
      // The window counts requests to the endpoint: the slot is free once it has answered, before the record.
      answered = result.statusCode !== null;
      inFlight.release(endpoint.id, answered);
      released = true;
    }
    const outcome = await recordAttempt(
      ctx,
      delivery,
      { ...result, attemptedAt },
      { ...deps.policy, random: Math.random() },
      batching.writeSuccess,
    );
    if (outcome.pauseMs !== undefined) await gate.pause(endpoint.id, outcome.pauseMs);
    if (outcome.next === 'RETRY') return { later: outcome.at.getTime() - ctx.clock.now().getTime() };
    if (outcome.next === 'HELD') {
      deps.logger.warn(
        { endpointId: endpoint.id, messageId: message.id },
        'webhook endpoint disabled; its messages are kept',
      );
      return { done: 'HELD', statusCode: result.statusCode };
    }
    return { done: outcome.status, statusCode: result.statusCode };
  } finally {
    if (!released) inFlight.release(endpoint.id, answered);
  }
}
