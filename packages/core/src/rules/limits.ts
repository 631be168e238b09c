import type { RateLimitOverrides } from '@stampcard/db';

/** The seed's three rate policies, in the order they are checked and reported. */
export const RATE_POLICIES = [
  { name: 'SECOND', windowMs: 5_000, describe: 'per 5 seconds' },
  { name: 'MINUTE', windowMs: 60_000, describe: 'per minute' },
  { name: 'HOUR', windowMs: 3_600_000, describe: 'per hour' },
] as const;

export type RatePolicyName = (typeof RATE_POLICIES)[number]['name'];

/** The limits a request is held to: the seed's defaults, or the account's `rateLimits` override. */
export type EffectiveLimits = {
  /** Requests per 5-second window, per API key. */
  second: number;
  /** Requests per minute, per API key. */
  minute: number;
  /** Requests per hour, per API key. */
  hour: number;
  /** Requests in flight per (account, client IP). */
  concurrency: number;
  /** Writes per minute, per API key, before each further write is slowed down; 0: no slowdown. */
  slowdownAfter: number;
};

/** The seed's table (30 per 5 s, 200 per minute, 10,000 per hour), 3 in flight, slowdown after 60 writes. */
export const DEFAULT_LIMITS: Readonly<EffectiveLimits> = Object.freeze({
  second: 30,
  minute: 200,
  hour: 10_000,
  concurrency: 3,
  slowdownAfter: 60,
});

/**
 * The seed's write slowdown: once a key's writes in the last `SLOWDOWN_WINDOW_MS` pass its threshold
 * (`slowdownAfter`), the n-th write over it waits n × `SLOWDOWN_STEP_MS` (the 61st 100 ms, the 63rd 300 ms, the
 * 70th 1,000 ms). The limiter's script applies it (`apps/api/src/limits/scripts.ts`), with these numbers.
 */
export const SLOWDOWN_STEP_MS = 100;
/** The window a key's writes are counted over, for the slowdown: a minute. */
export const SLOWDOWN_WINDOW_MS = 60_000;

/** The account's override over the defaults, field by field (an absent field keeps its default). */
export function effectiveLimits(overrides: RateLimitOverrides | null | undefined): EffectiveLimits {
  return {
    second: overrides?.second ?? DEFAULT_LIMITS.second,
    minute: overrides?.minute ?? DEFAULT_LIMITS.minute,
    hour: overrides?.hour ?? DEFAULT_LIMITS.hour,
    concurrency: overrides?.concurrency ?? DEFAULT_LIMITS.concurrency,
    slowdownAfter: overrides?.slowdownAfter ?? DEFAULT_LIMITS.slowdownAfter,
  };
}

/** The limit of one rate policy. */
export function policyLimit(limits: EffectiveLimits, policy: RatePolicyName): number {
  if (policy === 'SECOND') return limits.second;
  if (policy === 'MINUTE') return limits.minute;
  return limits.hour;
}

/** What the limiter found for one policy: requests counted in its window, and when room comes back. */
export type PolicyCount = {
  /** Admitted requests in the window, this one included when it was admitted (at most the limit). */
  used: number;
  /** Milliseconds until the oldest request that fills the window leaves it; 0 while there is room. */
  retryAfterMs: number;
  /** Milliseconds until the oldest request in the window leaves it; 0 when the window is empty. */
  resetMs: number;
};

/** The limiter's verdict on a keyed request. */
export type RateVerdict =
  | { admitted: true; counts: Record<RatePolicyName, PolicyCount>; slowdownMs: number }
  | { admitted: false; policy: RatePolicyName | 'CONCURRENCY'; counts: Record<RatePolicyName, PolicyCount> };

/** The 429 message: which limit, and when to come back. */
export function rateLimitMessage(
  policy: RatePolicyName | 'CONCURRENCY',
  limits: EffectiveLimits,
  retryAfterMs: number,
): string {
  if (policy === 'CONCURRENCY') {
    return `Concurrency limit reached: at most ${limits.concurrency} requests in flight per client IP address; retry when one has finished`;
  }
  const p = RATE_POLICIES.find((x) => x.name === policy)!;
  return `Rate limit exceeded: ${policyLimit(limits, policy)} requests ${p.describe} (${policy} policy); retry in ${retryAfterMs} ms`;
}
