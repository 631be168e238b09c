import { describe, expect, it } from 'vitest';
import { retryAfterMs } from '../src/index';

describe('retryAfterMs', () => {
  const now = Date.parse('2026-11-23T12:00:00Z');

  it('reads delay-seconds and HTTP dates, a date in the past as no wait', () => {
    expect(retryAfterMs('3', now)).toBe(3000);
    expect(retryAfterMs(' 0 ', now)).toBe(0);
    expect(retryAfterMs('Mon, 23 Nov 2026 12:00:10 GMT', now)).toBe(10_000);
    expect(retryAfterMs('Mon, 23 Nov 2026 11:00:00 GMT', now)).toBe(0);
  });

  it('bounds no wait: each caller applies its own', () => {
    expect(retryAfterMs('86400', now)).toBe(86_400_000);
    expect(retryAfterMs('Thu, 01 Jan 2099 00:00:00 GMT', now)).toBe(Date.parse('2099-01-01T00:00:00Z') - now);
  });

  it('is null when absent or malformed', () => {
    for (const bad of [null, undefined, '', '  ', '-1', '1.5', 'soon', '0x10'])
      expect(retryAfterMs(bad, now), String(bad)).toBeNull();
  });
});
