import { DEFAULT_LIMITS, type PolicyCount } from '@stampcard/core';
import { describe, expect, it } from 'vitest';
import { rateLimitHeaders } from '../src/limits/headers';

const count = (used: number, retryAfterMs = 0, resetMs = 0): PolicyCount => ({ used, retryAfterMs, resetMs });

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
