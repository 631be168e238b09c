/**
 * The rules of webhook delivery, pure: what an answer means, when the next attempt is, when an endpoint has
 * failed long enough to be disabled. The dispatcher feeds them what it saw and a clock.
 */

/** What an attempt's outcome asks for. */
export type AttemptVerdict =
  /** 2xx: the message is delivered. */
  | { kind: 'SUCCEEDED' }
  /** 410 Gone: the receiver says this endpoint is no more; it is disabled and its messages are kept. */
  | { kind: 'GONE' }
  /** 429 or 503 with a usable Retry-After: slow the endpoint down; the attempt does not count. */
  | { kind: 'THROTTLED'; retryAfterMs: number }
  /** Anything else (another status, a timeout, a refused connection): counts, and is retried. */
  | { kind: 'FAILED' };

/**
 * Longest pause a Retry-After may impose, in ms: a receiver cannot park its messages for days with one header
 * (past this, the answer counts as a failure, on the normal schedule).
 */
export const MAX_RETRY_AFTER_MS = 3_600_000;

/**
 * A Retry-After header in ms from `now`: delay-seconds or an HTTP date. Null when absent, malformed, or
 * longer than `MAX_RETRY_AFTER_MS`.
 */
export function parseRetryAfter(header: string | null | undefined, now: Date): number | null {
  if (!header) return null;
  const value = header.trim();
  let ms: number;
  if (/^\d{1,10}$/.test(value)) ms = Number(value) * 1000;
  else {
    const at = Date.parse(value);
    if (Number.isNaN(at) || !/[a-z]/i.test(value)) return null;
    ms = Math.max(0, at - now.getTime());
  }
  return ms <= MAX_RETRY_AFTER_MS ? ms : null;
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

/** Whether an endpoint subscribed to `eventTypes` (empty: all) wants an event of `type`. */
export function wantsEvent(endpoint: { eventTypes: readonly string[] }, type: string): boolean {
  return endpoint.eventTypes.length === 0 || endpoint.eventTypes.includes(type);
}
