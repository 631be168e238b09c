/**
 * The rules of webhook delivery, pure: what an answer means, when the next attempt is, when an endpoint has
 * failed long enough to be disabled. The dispatcher feeds them what it saw and a clock.
 */

import { retryAfterMs } from '@stampcard/webhooks';

/** What an attempt's outcome asks for. */
export type AttemptVerdict =
  /** 2xx: the message is delivered. */
  | { kind: 'SUCCEEDED' }
  /** 410 Gone: the receiver says this endpoint is no more; it is disabled and its messages are kept. */
  | { kind: 'GONE' }
  /**
   * 429 or 503 with a usable Retry-After: slow the endpoint down (`throttleStep` says how long, and whether the
   * attempt counts).
   */
  | { kind: 'THROTTLED'; retryAfterMs: number }
  /** Anything else (another status, a timeout, a refused connection): counts, and is retried. */
  | { kind: 'FAILED' };

/**
 * Longest pause a Retry-After may impose, in ms: a receiver cannot park its messages for days with one header
 * (past this, the answer counts as a failure, on the normal schedule).
 */
export const MAX_RETRY_AFTER_MS = 3_600_000;

/**
 * A receiver's Retry-After header in ms from `now`: delay-seconds or an HTTP date, read as the API client
 * reads it (`retryAfterMs` of `@stampcard/webhooks`). Null when absent, malformed, or longer than
 * `MAX_RETRY_AFTER_MS`: the dispatcher's own bound, where the client bounds its waits by `maxWaitMs`.
 */
export function parseRetryAfter(header: string | null | undefined, now: Date): number | null {
  const ms = retryAfterMs(header, now.getTime());
  return ms !== null && ms <= MAX_RETRY_AFTER_MS ? ms : null;
}

/** What an answer (or its absence: `status` null) means for the message and its endpoint. */
export function judgeAttempt(status: number | null, retryAfter: string | null, now: Date): AttemptVerdict {
  if (status !== null && status >= 200 && status < 300) return { kind: 'SUCCEEDED' };
  if (status === 410) return { kind: 'GONE' };
  if (status === 429 || status === 503) {
    const retryAfterMs = parseRetryAfter(retryAfter, now);
    if (retryAfterMs !== null) return { kind: 'THROTTLED', retryAfterMs };
  }
  return { kind: 'FAILED' };
}

/**
 * When the attempt after `attemptsMade` failed ones is due, in ms from now, or null when the schedule is
 * spent (the message is dead-lettered). `schedule[i]` is the delay before retry i+1; each gets ±10 % jitter
 * so that messages failing together do not come back together. `random` is in [0, 1).
 */
export function nextRetryDelay(
  schedule: readonly number[],
  attemptsMade: number,
  random: number,
): number | null {
  const base = schedule[attemptsMade - 1];
  if (base === undefined) return null;
  return Math.round(base * (0.9 + 0.2 * random));
}

/** How the dispatcher answers an endpoint that keeps asking it to wait (429/503 with Retry-After). */
export type ThrottlePolicy = {
  /**
   * The least a throttled answer holds its endpoint, in ms, whatever its Retry-After says: `Retry-After: 0`
   * (or a date in the past) must not mean "call again at once" (`WEBHOOK_THROTTLE_FLOOR_MS`).
   */
  floorMs: number;
  /**
   * Throttled answers an endpoint may give since its last success before each further one counts as a failed
   * attempt on its message's schedule, and toward disabling the endpoint (`WEBHOOK_FREE_THROTTLES`).
   */
  freeThrottles: number;
};

/** What a throttled answer does. */
export type ThrottleStep = {
  /** How long every dispatcher leaves the endpoint alone, in ms. */
  pauseMs: number;
  /** Whether the answer counts as a failed attempt (the free throttles are spent). */
  counts: boolean;
};

/**
 * What a throttled answer does to its endpoint. The endpoint is left alone for what it asked, and at least a
 * floor that grows with its run of throttled answers: as long as the run has lasted, and never less than
 * `floorMs`, so the answers of a receiver that always says "again, now" come 1, 1, 2, 4, 8… s apart (however
 * many deliveries answered at once: the growth is by time, not by count). The floor stops growing at the
 * retry schedule's longest delay, and at `MAX_RETRY_AFTER_MS`: a throttling endpoint is never held longer
 * than a receiver may ask for itself, nor than a failing one waits. Past `freeThrottles` answers in the run,
 * each further one counts as a failed attempt.
 *
 * @param throttles - the endpoint's throttled answers since its last success, this one included
 * @param throttledForMs - how long ago the first of them came (0 for the first)
 */
export function throttleStep(
  retryAfterMs: number,
  run: { throttles: number; throttledForMs: number },
  policy: ThrottlePolicy,
  schedule: readonly number[],
): ThrottleStep {
  const cap = Math.max(policy.floorMs, Math.min(MAX_RETRY_AFTER_MS, Math.max(0, ...schedule)));
  const floor = Math.min(cap, Math.max(policy.floorMs, run.throttledForMs));
  return { pauseMs: Math.max(retryAfterMs, floor), counts: run.throttles > policy.freeThrottles };
}

/**
 * Attempts kept per message: the first `ATTEMPT_LOG_KEEP` and the last `ATTEMPT_LOG_KEEP`; those between are
 * deleted as new ones are recorded, and counted on the message (`attemptsPruned`). A message's log, and what
 * the API shows of it, stays bounded whatever its receiver does.
 */
export const ATTEMPT_LOG_KEEP = 10;

/** Whether an endpoint failing since `failingSince` has failed long enough to be disabled. */
export function failedTooLong(failingSince: Date | null, now: Date, disableAfterMs: number): boolean {
  return failingSince !== null && now.getTime() - failingSince.getTime() >= disableAfterMs;
}

/** The secrets that sign a delivery now: the current one, and the previous one while its overlap lasts. */
export function signingSecrets(
  endpoint: { secret: string; previousSecret: string | null; previousSecretExpiresAt: Date | null },
  now: Date,
): string[] {
  const { previousSecret, previousSecretExpiresAt } = endpoint;
  return previousSecret && previousSecretExpiresAt && previousSecretExpiresAt.getTime() > now.getTime()
    ? [endpoint.secret, previousSecret]
    : [endpoint.secret];
}
