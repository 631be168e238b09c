import { describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS, effectiveLimits, rateLimitMessage } from '../src/rules/limits';

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

describe('rateLimitMessage', () => {
  it('names the limit hit', () => {
    expect(rateLimitMessage('MINUTE', DEFAULT_LIMITS, 2000)).toContain('200 requests per minute');
    expect(rateLimitMessage('CONCURRENCY', DEFAULT_LIMITS, 0)).toContain('at most 3 requests in flight');
  });
});
