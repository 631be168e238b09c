import { describe, expect, it } from 'vitest';
import { retryAfterMs } from '../src/retry';

describe('retryAfterMs', () => {
  const now = Date.parse('2026-11-23T12:00:00Z');

  it('reads delay-seconds and HTTP dates, a date in the past as no wait', () => {
    expect(retryAfterMs('3', now)).toBe(3000);
    expect(retryAfterMs(' 0 ', now)).toBe(0);
    expect(retryAfterMs('Mon, 23 Nov 2026 12:00:10 GMT', now)).toBe(10_000);
    expect(retryAfterMs('Mon, 23 Nov 2026 11:00:00 GMT', now)).toBe(0);
  });

  it('is null when absent or malformed, so the backoff decides', () => {
    for (const bad of [null, '', '  ', '-1', '1.5', 'soon'])
      expect(retryAfterMs(bad, now), String(bad)).toBeNull();
  });
});
