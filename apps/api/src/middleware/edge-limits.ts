import {
  assertLive,
  authenticate,
  cachedPrincipal,
  DEFAULT_LIMITS,
  type EffectiveLimits,
  effectiveLimits,
  type Principal,
  type RatePolicyName,
  rateLimitMessage,
} from '@stampcard/core';
import type { Context, MiddlewareHandler } from 'hono';
import type { AppEnv } from '../env';
import { errorBody } from '../errors';
import { clientIp } from '../lib/client-ip';
import { rateLimitHeaders } from '../limits/headers';
import type { RateLimiter } from '../limits/limiter';
import { bearerToken } from './auth';
import { requestBudgetMs } from './deadline';

const WRITES = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The seed's 429 body, exactly: no field beyond the eight it lists. */
function tooManyRequests(
  c: Context<AppEnv>,
  policy: RatePolicyName | 'CONCURRENCY',
  limits: EffectiveLimits,
  retryAfterMs: number,
  headers: Record<string, string>,
) {
  c.set('refusedBy', policy);
  const { requestId: _omitted, ...body } = errorBody(
    c,
    'RATE_LIMIT',
    rateLimitMessage(policy, limits, retryAfterMs),
    { policyName: policy },
  );
  return c.json(body, 429, {
    ...headers,
    'Retry-After': String(Math.max(1, Math.ceil(retryAfterMs / 1000))),
  });
}

/**
 * `/v1`'s authentication and edge protections, in the order a request meets them:
 * 1. A key this process does not know yet is looked up in PostgreSQL under a concurrency slot of the client
 *    IP (requests with no valid key count per IP); concurrent requests with one key share one look-up.
 * 2. One Redis round trip checks and counts the key's three rate windows and its writes per minute, and takes
 *    a slot of the (account, client IP) concurrency limit. A refused request gets the seed's 429 and does no
 *    work.
 * 3. A write past the slowdown threshold waits its delay (holding no database connection; the deadline moves
 *    by as much).
 * 4. The answer carries the rate headers, whatever its status; the slot is given back, without waiting for Redis.
 * When Redis does not answer, requests go through unlimited and without rate headers (see the limiter).
 */
export function edgeLimits(limiter: RateLimiter, trustedProxyHops = 0): MiddlewareHandler<AppEnv> {
  const lookups = new Map<string, Promise<Principal | 'busy'>>();

  /** A key not in the cache: one look-up per key at a time, under a slot of the client IP. */
  const lookUp = (c: Context<AppEnv>, key: string, ip: string): Promise<Principal | 'busy'> => {
    const pending = lookups.get(key);
    if (pending) return pending;
    // In the map before the first await, so that concurrent requests with this key wait for this look-up.
    const lookup = (async (): Promise<Principal | 'busy'> => {
      const slot = await limiter.admitAnonymous(ip, DEFAULT_LIMITS.concurrency, requestBudgetMs(c));
      if (slot === false) return 'busy';
      try {
        return await authenticate(c.get('ctx'), key);
      } finally {
        if (slot) void limiter.release(slot);
      }
    })().finally(() => lookups.delete(key));
    lookups.set(key, lookup);
    return lookup;
  };

  return async (c, next) => {
    const key = bearerToken(c.req.header('authorization'));
    const ip = clientIp(c, trustedProxyHops);
    let principal = cachedPrincipal(c.get('ctx'), key);
    if (!principal) {
      // No key at all is refused without a look-up, so it needs no slot.
      const found = key ? await lookUp(c, key, ip) : await authenticate(c.get('ctx'), key);
      if (found === 'busy') return tooManyRequests(c, 'CONCURRENCY', DEFAULT_LIMITS, 1000, {});
      // A look-up that outlived the request's deadline: it takes no slot and counts against no limit.
      assertLive(c.get('ctx'));
      principal = found;
    }
    c.set('principal', principal);
    c.set('accountId', principal.accountId);

    const limits = effectiveLimits(principal.rateLimits);
    const spans = c.get('ctx').spans;
    const admitting = spans ? performance.now() : 0;
    const admission = await limiter.admit({
      apiKeyId: principal.apiKeyId,
      accountId: principal.accountId,
      clientIp: ip,
      write: WRITES.has(c.req.method),
      limits,
      budgetMs: requestBudgetMs(c),
    });
    spans?.('limits', performance.now() - admitting);
    if (!admission) {
      await next();
      return undefined;
    }
    const headers = rateLimitHeaders(admission.counts, limits);
    if (!admission.admitted) {
      const retry =
        admission.policy === 'CONCURRENCY' ? 1000 : admission.counts[admission.policy].retryAfterMs;
      return tooManyRequests(c, admission.policy, limits, retry, headers);
    }
    try {
      if (admission.slowdownMs > 0) {
        headers['Stampcard-Slowdown-Milliseconds'] = String(admission.slowdownMs);
        c.get('extendDeadline')?.(admission.slowdownMs);
        await sleep(admission.slowdownMs);
      }
      await next();
    } finally {
      // Given back without waiting for Redis's answer: the answer does not need it. The release is written to
      // Redis now, before the answer is (see `limiterConnection`), so a caller that sends its next request once
      // this one is answered finds its slot free, on this API process or another.
      if (admission.lease) void limiter.release(admission.lease);
    }
    for (const [name, value] of Object.entries(headers)) c.res.headers.set(name, value);
    return undefined;
  };
}
