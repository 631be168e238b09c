/**
 * A `Retry-After` header (RFC 9110: delay-seconds, or an HTTP date) as a wait in ms from `now` (epoch ms;
 * the current time unless given); a date already past is no wait. Null when absent or malformed (a negative
 * or fractional number is neither form). The one reading of the header for the dispatcher (a receiver asking
 * it to wait) and the API client (the API asking it to). Neither bound is here, each caller keeps its own:
 * the dispatcher refuses a wait past an hour (`MAX_RETRY_AFTER_MS` in core), the client one past what is
 * left of its `maxWaitMs`.
 */
export function retryAfterMs(header: string | null | undefined, now = Date.now()): number | null {
  const value = header?.trim();
  if (!value) return null;
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  // An HTTP date names its day and month; a bare number that is not delay-seconds ("-1", "1.5") is no date.
  const at = /[a-z]/i.test(value) ? Date.parse(value) : Number.NaN;
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}
