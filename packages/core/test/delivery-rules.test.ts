import { describe, expect, it } from 'vitest';
import {
  failedTooLong,
  judgeAttempt,
  MAX_RETRY_AFTER_MS,
  nextRetryDelay,
  parseRetryAfter,
  signingSecrets,
  type ThrottlePolicy,
  throttleStep,
} from '../src/rules/delivery';

const now = new Date('2026-11-22T12:00:00Z');

describe('delivery rules', () => {
  it('reads Retry-After as seconds or an HTTP date, and ignores what it cannot use', () => {
    expect(parseRetryAfter('30', now)).toBe(30_000);
    expect(parseRetryAfter(' 0 ', now)).toBe(0);
    expect(parseRetryAfter('Sun, 22 Nov 2026 12:00:10 GMT', now)).toBe(10_000);
    expect(parseRetryAfter('Sun, 22 Nov 2026 11:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter(String(MAX_RETRY_AFTER_MS / 1000), now)).toBe(MAX_RETRY_AFTER_MS);
    for (const bad of [
      null,
      undefined,
      '',
      '-5',
      '1.5',
      'soon',
      '3601',
      '99999999999',
      'Thu, 01 Jan 2099 00:00:00 GMT',
    ])
      expect(parseRetryAfter(bad, now), String(bad)).toBeNull();
  });

  it('judges an answer: 2xx succeeds, 410 is gone, 429/503 with Retry-After throttle, the rest fail', () => {
    expect(judgeAttempt(200, null, now)).toEqual({ kind: 'SUCCEEDED' });
    expect(judgeAttempt(204, null, now)).toEqual({ kind: 'SUCCEEDED' });
    expect(judgeAttempt(299, null, now)).toEqual({ kind: 'SUCCEEDED' });
    expect(judgeAttempt(410, '5', now)).toEqual({ kind: 'GONE' });
    expect(judgeAttempt(429, '5', now)).toEqual({ kind: 'THROTTLED', retryAfterMs: 5000 });
    expect(judgeAttempt(503, '1', now)).toEqual({ kind: 'THROTTLED', retryAfterMs: 1000 });
    for (const [status, retryAfter] of [
      [429, null],
      [503, 'later'],
      [500, '5'],
      [301, null],
      [199, null],
      [300, null],
      [null, null],
    ] as const)
      expect(judgeAttempt(status, retryAfter, now), `${status}`).toEqual({ kind: 'FAILED' });
  });

  it('spaces retries by the schedule with ±10 % jitter, and ends when it is spent', () => {
    const schedule = [0, 5000, 300_000];
    expect(nextRetryDelay(schedule, 1, 0.5)).toBe(0);
    expect(nextRetryDelay(schedule, 2, 0)).toBe(4500);
    expect(nextRetryDelay(schedule, 2, 0.999_999)).toBe(5500);
    expect(nextRetryDelay(schedule, 3, 0.5)).toBe(300_000);
    expect(nextRetryDelay(schedule, 4, 0.5)).toBeNull();
    expect(nextRetryDelay([], 1, 0.5)).toBeNull();
  });

  describe('throttled answers', () => {
    const policy: ThrottlePolicy = { floorMs: 1000, freeThrottles: 10 };
    const schedule = [0, 5000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000];
    const step = (retryAfterMs: number, throttles: number, throttledForMs: number, s = schedule) =>
      throttleStep(retryAfterMs, { throttles, throttledForMs }, policy, s);

    it('Retry-After: 0 (or a date past) still waits the floor', () => {
      expect(step(0, 1, 0)).toEqual({ pauseMs: 1000, counts: false });
      expect(step(0, 1, 0).pauseMs).toBeGreaterThan(0);
    });

    it('the floor grows with the run: as long as the run has lasted, so a looping receiver is probed 1, 1, 2, 4, 8… s apart', () => {
      let t = 0;
      const probes = [t];
      for (let n = 1; n <= 6; n++) {
        t += step(0, n, t).pauseMs;
        probes.push(t);
      }
      expect(probes).toEqual([0, 1000, 2000, 4000, 8000, 16_000, 32_000]);
    });

    it('many answers at once do not make the floor jump: it grows with time, not with their number', () => {
      expect(step(0, 32, 0).pauseMs).toBe(1000);
      expect(step(0, 32, 2500).pauseMs).toBe(2500);
    });

    it("the floor stops at the schedule's longest delay and at an hour; a longer Retry-After is honoured", () => {
      expect(step(0, 5, 10 * 3_600_000).pauseMs).toBe(3_600_000);
      expect(step(0, 5, 60_000, [50, 100, 200]).pauseMs).toBe(1000);
      expect(step(0, 5, 60_000, [5000, 20_000]).pauseMs).toBe(20_000);
      expect(step(0, 5, 60_000, []).pauseMs).toBe(1000);
      expect(step(1_800_000, 5, 60_000).pauseMs).toBe(1_800_000);
      expect(step(30_000, 1, 0).pauseMs).toBe(30_000);
    });

    it('past the free throttles of the run, each further one counts as a failure', () => {
      expect(step(0, 10, 0).counts).toBe(false);
      expect(step(0, 11, 0).counts).toBe(true);
      expect(step(5000, 500, 0)).toEqual({ pauseMs: 5000, counts: true });
      expect(
        throttleStep(0, { throttles: 1, throttledForMs: 0 }, { ...policy, freeThrottles: 0 }, schedule),
      ).toEqual({ pauseMs: 1000, counts: true });
    });
  });

  it('disables an endpoint once it has failed for the whole period', () => {
    const day = 24 * 3600 * 1000;
    expect(failedTooLong(null, now, 5 * day)).toBe(false);
    expect(failedTooLong(new Date(now.getTime() - 5 * day + 1), now, 5 * day)).toBe(false);
    expect(failedTooLong(new Date(now.getTime() - 5 * day), now, 5 * day)).toBe(true);
  });

  it('signs with the previous secret only while its overlap lasts', () => {
    const ep = {
      secret: 'whsec_new',
      previousSecret: 'whsec_old',
      previousSecretExpiresAt: new Date(now.getTime() + 1),
    };
    expect(signingSecrets(ep, now)).toEqual(['whsec_new', 'whsec_old']);
    expect(signingSecrets({ ...ep, previousSecretExpiresAt: now }, now)).toEqual(['whsec_new']);
    expect(signingSecrets({ ...ep, previousSecret: null }, now)).toEqual(['whsec_new']);
  });
});
