import {
  type EffectiveLimits,
  type PolicyCount,
  policyLimit,
  RATE_POLICIES,
  type RatePolicyName,
} from '@stampcard/core';

type HeaderNames = { limit: string; remaining: string; retryAfter: string };

const NAMES = new Map<RatePolicyName, HeaderNames>(
  RATE_POLICIES.map((p) => {
    const word = p.name[0] + p.name.slice(1).toLowerCase();
    return [
      p.name,
      {
        limit: `Stampcard-RateLimit-${word}-Limit`,
        remaining: `Stampcard-RateLimit-${word}-Remaining`,
        retryAfter: `Stampcard-Retry-After-${word}-Milliseconds`,
      },
    ];
  }),
);

/** The `Stampcard-*` headers of one rate policy (`Second`, `Minute`, `Hour` in their names). */
export function rateHeaderNames(policy: RatePolicyName): HeaderNames {
  return NAMES.get(policy)!;
}

/**
 * The rate headers of an answer to a keyed request: the seed's three `Stampcard-RateLimit-*` pairs, a
 * `Stampcard-Retry-After-*-Milliseconds` for each policy hit (no request left) or exceeded, and the IETF
 * draft's `RateLimit-Policy` and `RateLimit` (draft-ietf-httpapi-ratelimit-headers: `q` quota, `w` window and
 * `t` seconds, `r` remaining).
 */
export function rateLimitHeaders(
  counts: Record<RatePolicyName, PolicyCount>,
  limits: EffectiveLimits,
): Record<string, string> {
  const headers: Record<string, string> = {};
  const policy: string[] = [];
  const current: string[] = [];
  for (const p of RATE_POLICIES) {
    const names = rateHeaderNames(p.name);
    const limit = policyLimit(limits, p.name);
    const { used, retryAfterMs, resetMs } = counts[p.name];
    const remaining = Math.max(0, limit - used);
    headers[names.limit] = String(limit);
    headers[names.remaining] = String(remaining);
    if (remaining === 0) headers[names.retryAfter] = String(retryAfterMs);
    const key = p.name.toLowerCase();
    policy.push(`"${key}";q=${limit};w=${p.windowMs / 1000}`);
    current.push(`"${key}";r=${remaining};t=${Math.ceil(resetMs / 1000)}`);
  }
  headers['RateLimit-Policy'] = policy.join(', ');
  headers.RateLimit = current.join(', ');
  return headers;
}
