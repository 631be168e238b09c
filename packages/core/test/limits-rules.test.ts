import { describe, expect, it } from 'vitest';
import {
  DEFAULT_LIMITS,
  effectiveLimits,
  type PolicyCount,
  rateLimitHeaders,
  rateLimitMessage,
  slowdownDelayMs,
} from '../src/rules/limits';

const count = (used: number, retryAfterMs = 0, resetMs = 0): PolicyCount => ({ used, retryAfterMs, resetMs });

describe('slowdownDelayMs', () => {
  it("follows the seed's examples: 61st 100 ms, 63rd 300 ms, 70th 1,000 ms", () => {
    expect(slowdownDelayMs(60, 60)).toBe(0);
    expect(slowdownDelayMs(61, 60)).toBe(100);
    expect(slowdownDelayMs(63, 60)).toBe(300);
    expect(slowdownDelayMs(70, 60)).toBe(1000);
  });

  it('is off at 0', () => {
    expect(slowdownDelayMs(1000, 0)).toBe(0);
  });
});

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
