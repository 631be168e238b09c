import { describe, expect, it } from 'vitest';
import {
  DEFAULT_LIMITS,
  effectiveLimits,
  type PolicyCount,
  rateLimitHeaders,
  rateLimitMessage,
} from '../src/rules/limits';

const count = (used: number, retryAfterMs = 0, resetMs = 0): PolicyCount => ({ used, retryAfterMs, resetMs });

describe('effectiveLimits', () => {
  it("is the seed's table without an override, and the override field by field", () => {
    expect(effectiveLimits(null)).toEqual(DEFAULT_LIMITS);
    expect(DEFAULT_LIMITS).toEqual({
      second: 30,
      minute: 200,
      hour: 10_000,
      concurrency: 3,
      slowdownAfter: 60,
    });
    expect(effectiveLimits({ minute: 500, slowdownAfter: 0 })).toEqual({
      ...DEFAULT_LIMITS,
      minute: 500,
      slowdownAfter: 0,
    });
  });
});

describe('rateLimitHeaders', () => {
  it('adds a Retry-After header only for a policy with nothing left', () => {
    const h = rateLimitHeaders(
      { SECOND: count(30, 1200, 1200), MINUTE: count(31, 0, 59_000), HOUR: count(31, 0, 3_599_000) },
      DEFAULT_LIMITS,
    );
    expect(h['Stampcard-RateLimit-Second-Remaining']).toBe('0');
    expect(h['Stampcard-Retry-After-Second-Milliseconds']).toBe('1200');
    expect(h['Stampcard-RateLimit-Minute-Remaining']).toBe('169');
    expect(h['Stampcard-Retry-After-Minute-Milliseconds']).toBeUndefined();
    expect(h.RateLimit).toBe('"second";r=0;t=2, "minute";r=169;t=59, "hour";r=9969;t=3599');
  });
});

describe('rateLimitMessage', () => {
  it('names the limit hit', () => {
    expect(rateLimitMessage('MINUTE', DEFAULT_LIMITS, 2000)).toContain('200 requests per minute');
    expect(rateLimitMessage('CONCURRENCY', DEFAULT_LIMITS, 0)).toContain('at most 3 requests in flight');
  });
});
