import { retryAfterMs } from '@stampcard/webhooks';

/** The header that makes a POST safe to repeat (see the API's Idempotency-Key). */
export const IDEMPOTENCY_KEY_HEADER = 'Idempotency-Key';

/** The answers worth the same request again: a rate limit, and a store that did not answer in time. */
const RETRIED_STATUSES = new Set([429, 503]);

export type RetryOptions = {
  /**
   * Most attempts of one request, the first included (1: never retry).
   * @defaultValue 3
   */
  maxAttempts?: number;
  /**
   * Most time one request spends waiting between its attempts, in ms, all waits added. A retry whose wait
   * would go past it is not made: the 429 or 503 is answered instead.
   * @defaultValue 30000
   */
  maxWaitMs?: number;
  /**
   * The wait before the first retry of an answer without `Retry-After`, in ms; it doubles at each retry, and
   * each wait is a random part of it between half and all (so that clients refused together spread out).
   * @defaultValue 500
   */
  backoffMs?: number;
  /**
   * Called before each wait: which attempt failed, with what status, and how long the next one waits.
   * @defaultValue none
   */
  onRetry?: (retry: Retry) => void;
};

/** One retry about to happen. */
export type Retry = {
  /** The request being repeated, `Idempotency-Key` included. */
  request: Request;
  /** The attempt that was refused, from 1. */
  attempt: number;
  /** Its answer: the status and headers (`Retry-After`); the body is not kept. */
  response: Response;
  /** How long the client waits before the next attempt, in ms. */
  delayMs: number;
};

/**
 * A 503 whose body has `outcome` says a write was sent: its answer lost (`"UNKNOWN"`), or it was recorded
 * but its answer not completed in time (`"LANDED"`). The change may have been made, so the caller looks it up
 * instead of the client repeating it.
 */
async function mayHaveWritten(res: Response): Promise<boolean> {
  if (res.status !== 503) return false;
  try {
    const body: unknown = await res.clone().json();
    return typeof body === 'object' && body !== null && 'outcome' in body;
  } catch {
    return false;
  }
}

function sleep(ms: number, signal: AbortSignal | null): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(done, ms);
    function done() {
      signal?.removeEventListener('abort', aborted);
      resolve();
    }
    function aborted() {
      clearTimeout(timer);
      reject(signal?.reason);
    }
    signal?.addEventListener('abort', aborted, { once: true });
  });
}

/**
 * `fetch` with the client's two habits: every POST carries an `Idempotency-Key` (a random UUID unless the
 * request has one), and a 429 or 503 is tried again after its `Retry-After` (else after a growing backoff),
 * within `maxAttempts` and `maxWaitMs`, with the same key, so that a repeat of a request that did run is
 * answered from the first instead of running twice. A 503 that says a write may have happened is not
 * repeated, nor is a request whose connection failed (its outcome is unknown): both are the caller's to
 * look up.
 */
export function retryingFetch(
  base: (request: Request) => Promise<Response>,
  options: RetryOptions = {},
): (request: Request) => Promise<Response> {
  const maxAttempts = Math.max(1, options.maxAttempts ?? 3);
  const maxWaitMs = options.maxWaitMs ?? 30_000;
  const backoffMs = options.backoffMs ?? 500;
  return async (input) => {
    let request = input;
    if (request.method === 'POST' && !request.headers.has(IDEMPOTENCY_KEY_HEADER)) {
      const headers = new Headers(request.headers);
      headers.set(IDEMPOTENCY_KEY_HEADER, crypto.randomUUID());
      request = new Request(request, { headers });
    }
    let waited = 0;
    for (let attempt = 1; ; attempt++) {
      // Each attempt sends a copy: a body can be read once.
      const res = await base(attempt < maxAttempts ? request.clone() : request);
      if (!RETRIED_STATUSES.has(res.status) || attempt >= maxAttempts || (await mayHaveWritten(res))) {
        return res;
      }
      const backoff = backoffMs * 2 ** (attempt - 1);
      // `Retry-After` read as the dispatcher reads a receiver's (`@stampcard/webhooks`), but with no hour's
      // bound: a wait past what is left of `maxWaitMs` is not made, however long, and the answer is given.
      const delayMs =
        retryAfterMs(res.headers.get('retry-after')) ?? Math.round(backoff * (0.5 + Math.random() / 2));
      if (waited + delayMs > maxWaitMs) return res;
      options.onRetry?.({ request, attempt, response: res, delayMs });
      await res.body?.cancel();
      await sleep(delayMs, request.signal);
      waited += delayMs;
    }
  };
}
