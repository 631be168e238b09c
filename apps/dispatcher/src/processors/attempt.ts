import type { Logger } from '@stampcard/config';
import { type Ctx, type Delivery, type DeliveryPolicy, judgeAttempt, recordAttempt } from '@stampcard/core';
import { type Queues, scheduleDeliveries } from '@stampcard/jobs';
import { contextOf, currentTraceparent, type DeliveryMetrics, inSpan, SpanKind } from '@stampcard/telemetry';
import { signatureHeaders } from '@stampcard/webhooks';
import { DelayedError, type Job } from 'bullmq';
import type { DeliveryBatching } from '../batching';
import type { Sender } from '../http';
import type { createBatchLanes, createInFlight, EndpointGate } from '../throttle';

export type DeliverDeps = {
  ctx: Ctx;
  queues: Queues;
  logger: Logger;
  sender: Sender;
  gate: EndpointGate;
  inFlight: ReturnType<typeof createInFlight>;
  /** Messages of one endpoint that batch jobs hold at once in this process. */
  lanes: ReturnType<typeof createBatchLanes>;
  /** Reads and success writes shared with the jobs running at the same moment. */
  batching: DeliveryBatching;
  policy: Omit<DeliveryPolicy, 'random'>;
  /**
   * What the dispatcher counts of its attempts, into its process's metrics.
   * @defaultValue none
   */
  metrics?: DeliveryMetrics;
};

/** A rate-limit wait this short is slept in place; a longer one puts the message back until its slot. */
const SLEEP_IN_PLACE_MS = 250;
/** How long a message waits in place for its endpoint's in-flight window before stepping aside. */
export const WINDOW_WAIT_MS = 50;

/** How long a delivery that found its message claimed by another waits before it looks again, at least. */
const CLAIMED_ELSEWHERE_MS = 1000;

/** How long until the message's attempt is due, in ms from `now`; 20 ms or less counts as due now. */
export const notDueFor = (message: Delivery['message'], now: Date) => {
  const ms = message.nextAttemptAt.getTime() - now.getTime();
  return ms > 20 ? ms : 0;
};

/** When a delivery that found its message claimed by another looks again, in ms from now: 1 to 2 s. */
export const claimedElsewhereMs = () => CLAIMED_ELSEWHERE_MS + Math.random() * CLAIMED_ELSEWHERE_MS;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Puts the job back in the queue for `ms` without spending one of BullMQ's attempts. */
export async function later(job: Job, token: string | undefined, ms: number): Promise<never> {
  await job.moveToDelayed(Date.now() + Math.max(0, ms), token);
  throw new DelayedError();
}

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
export async function attemptDelivery(
  deps: DeliverDeps,
  delivery: Delivery,
  /**
   * How long to wait for a slot of the endpoint's window before stepping aside, in ms.
   * @defaultValue `WINDOW_WAIT_MS`
   */
  windowWaitMs = WINDOW_WAIT_MS,
  /**
   * The message is claimed already (its batch's messages were claimed as they were loaded, `loadAndClaim`): the attempt
   * does not claim it, and ends that claim if it steps aside before its request goes.
   * @defaultValue false
   */
  claimedAhead = false,
): Promise<AttemptStep> {
  const { ctx, sender, gate, inFlight, batching } = deps;
  const { endpoint, message } = delivery;
  const claim = { messageId: message.id, generation: message.generation, eventAt: message.eventAt };
  /**
   * Stepping aside before the request goes: the message's next job may claim it at once. A release that fails
   * (PostgreSQL away) leaves the claim to its lease, and the message's next job waits for that: it is not lost,
   * and stepping aside is not turned into a failed attempt.
   */
  const aside = async (ms: number): Promise<AttemptStep> => {
    if (claimedAhead) await batching.release(claim).catch(() => undefined);
    return { later: ms };
  };
  const notYet = notDueFor(message, ctx.clock.now());
  if (notYet > 0) return aside(notYet);
  if (!(await inFlight.acquire(endpoint.id, windowWaitMs))) {
    // A healthy endpoint that is merely busy frees a slot within milliseconds: come back soon. One whose
    // window timeouts narrowed is slow: come back much later, leaving the process's slots to the others.
    return aside(inFlight.narrowed(endpoint.id) ? 250 + Math.random() * 750 : 10 + Math.random() * 40);
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
    if (wait > 0) return await aside(wait + Math.random() * 50);
    // Another delivery of it is in flight (a job run twice, another dispatcher's), or it has just ended: this
    // one comes back after a while, and finds it ended, or its claim expired (that dispatcher died).
    if (!claimedAhead && !(await batching.claim(claim))) return { later: claimedElsewhereMs() };

    // The outbox event's id too, so a receiver can match a delivery with the event feed; the message's place
    // among its participant's to this endpoint, so it can drop what is older than what it has; and, for an
    // endpoint that asks for it, the trace this delivery is part of (W3C Trace Context). One object, the
    // request's own: the sender adds the headers every delivery carries to it.
    const sent: Record<string, string> = signatureHeaders({
      id: message.id,
      timestamp: Math.floor(Date.now() / 1000),
      body: delivery.body,
      secrets: delivery.secrets,
    });
    if (message.eventId) sent['stampcard-event-id'] = message.eventId;
    if (message.sequence !== null) sent['webhook-sequence'] = String(message.sequence);
    // An ordered message sent after the one before it was dead-lettered names that one: the gap.
    if (message.previousId) sent['webhook-previous-id'] = message.previousId;
    if (endpoint.traceContext) {
      const traceparent = currentTraceparent();
      if (traceparent) sent.traceparent = traceparent;
    }
    const attemptedAt = ctx.clock.now();
    const result = await sender.send(endpoint.url, sent, delivery.body);
    const verdict = judgeAttempt(result.statusCode, result.retryAfter, attemptedAt).kind;
    if (verdict === 'THROTTLED') {
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
    countAttempt(deps, delivery, verdict, result, outcome);
    // The next ordered message of the participant, made due by this one's end (the sweep covers a crash here).
    if (outcome.released?.length) await scheduleDeliveries(deps.queues, outcome.released);
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

/**
 * `attemptDelivery` in a client span of the trace its job carries (tracing on and a `traceparent` given), with
 * the answer's status and the endpoint's id; without one, the attempt alone.
 */
export function tracedAttempt(
  deps: DeliverDeps,
  delivery: Delivery,
  traceparent: string | undefined,
  windowWaitMs = WINDOW_WAIT_MS,
  claimedAhead = false,
): Promise<AttemptStep> {
  if (!traceparent) return attemptDelivery(deps, delivery, windowWaitMs, claimedAhead);
  return inSpan(
    'deliver webhook',
    {
      kind: SpanKind.CLIENT,
      parent: contextOf(traceparent),
      attributes: {
        'stampcard.webhook_message.id': delivery.message.id,
        'stampcard.webhook_endpoint.id': delivery.endpoint.id,
        'stampcard.webhook_message.attempt': delivery.message.attempts + 1,
      },
    },
    async (span) => {
      const step = await attemptDelivery(deps, delivery, windowWaitMs, claimedAhead);
      if ('done' in step) {
        span.setAttribute('stampcard.webhook_message.status', step.done);
        if (step.statusCode !== null) span.setAttribute('http.response.status_code', step.statusCode);
      } else span.setAttribute('stampcard.webhook_message.later_ms', Math.round(step.later));
      return step;
    },
  );
}

/**
 * One recorded attempt in the process's metrics: its outcome and duration, the end of its message's schedule
 * if it ended, and for a delivery the time from its event to now (the first schedule only: a replayed message,
 * or one held while its endpoint was disabled, would say how long the operator waited).
 */
function countAttempt(
  deps: DeliverDeps,
  delivery: Delivery,
  verdict: ReturnType<typeof judgeAttempt>['kind'],
  result: { statusCode: number | null; errorClass: string | null; latencyMs: number },
  outcome: Awaited<ReturnType<typeof recordAttempt>>,
) {
  const { metrics } = deps;
  if (!metrics) return;
  const kind = verdict === 'SUCCEEDED' ? 'succeeded' : verdict === 'THROTTLED' ? 'throttled' : 'failed';
  metrics.attempt(
    kind,
    kind === 'succeeded' ? null : (result.errorClass ?? 'HTTP_STATUS'),
    result.latencyMs / 1000,
  );
  if (outcome.next === 'HELD') metrics.settled('HELD');
  else if (outcome.next !== 'RETRY') metrics.settled(outcome.status);
  if (kind === 'succeeded' && delivery.recordedAt && delivery.message.generation === 0) {
    metrics.delivered(delivery.recordedAt, deps.ctx.clock.now());
  }
}
