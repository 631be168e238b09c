import * as webhooks from '@stampcard/webhooks';
import { describe, expect, it } from 'vitest';
import { retryAfterMs } from '../src/index';

describe("the client's Retry-After", () => {
  it("is read as the dispatcher reads a receiver's (one implementation, tested in @stampcard/webhooks)", () => {
    expect(retryAfterMs).toBe(webhooks.retryAfterMs);
  });

  it("keeps a wait longer than the dispatcher's hour (core's parseRetryAfter refuses it): maxWaitMs bounds it", () => {
    expect(retryAfterMs('7200', Date.parse('2026-11-23T12:00:00Z'))).toBe(7_200_000);
    expect(retryAfterMs('soon')).toBeNull();
  });
});
