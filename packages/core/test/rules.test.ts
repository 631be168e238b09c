import { describe, expect, it } from 'vitest';
import {
  countAction,
  frameAncestorProblem,
  frameAncestorsDirective,
  goalCount,
  hasWinnersCap,
  limitAllows,
  type MonthlyCounters,
  manualClock,
  monthKey,
  monthlyCountersAt,
  monthStart,
  previousMonthKey,
  reachesGoal,
  type UnlockRewardRule,
} from '../src/index';

const rule = (over: Partial<UnlockRewardRule> = {}): UnlockRewardRule => ({
  conversionsRequired: 1,
  isUnlimited: false,
  limit: 1,
  limitDuration: 'IN_TOTAL',
  numberOfWinners: null,
  ...over,
});

describe('reachesGoal', () => {
  it('is true exactly at each multiple of conversionsRequired', () => {
    const r = rule({ conversionsRequired: 3 });
    const hits = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9].filter((n) => reachesGoal(r, n));
    expect(hits).toEqual([3, 6, 9]);
  });

  it('treats conversionsRequired below 1 as 1, and a zero count as no goal', () => {
    expect(reachesGoal(rule({ conversionsRequired: 0 }), 1)).toBe(true);
    expect(reachesGoal(rule({ conversionsRequired: 0 }), 2)).toBe(true);
    expect(reachesGoal(rule({ conversionsRequired: 1 }), 0)).toBe(false);
  });
});

describe('goalCount', () => {
  it('measures IN_TOTAL rewards on the all-time count and PER_MONTH rewards on the month', () => {
    const counts = { total: 11, monthly: 4 };
    expect(goalCount(rule({ limitDuration: 'IN_TOTAL' }), counts)).toBe(11);
    expect(goalCount(rule({ limitDuration: 'PER_MONTH' }), counts)).toBe(4);
  });
});

describe('limitAllows', () => {
  it('allows earnings up to the limit, then refuses', () => {
    const r = rule({ limit: 2 });
    expect(limitAllows(r, 0)).toBeNull();
    expect(limitAllows(r, 1)).toBeNull();
    expect(limitAllows(r, 2)).toBe('LIMIT_REACHED');
    expect(limitAllows(r, 3)).toBe('LIMIT_REACHED');
  });

  it('isUnlimited lifts the limit', () => {
    expect(limitAllows(rule({ isUnlimited: true, limit: 1 }), 1000)).toBeNull();
  });

  it('caps distinct monthly winners for PER_MONTH rewards, but not a participant already among them', () => {
    const r = rule({ limitDuration: 'PER_MONTH', limit: 3, numberOfWinners: 2 });
    expect(limitAllows(r, 0, { count: 1, includesParticipant: false })).toBeNull();
    expect(limitAllows(r, 0, { count: 2, includesParticipant: false })).toBe('WINNERS_CAP_REACHED');
    expect(limitAllows(r, 1, { count: 2, includesParticipant: true })).toBeNull();
    // The participant's own limit still applies when it is already a winner.
    expect(limitAllows(r, 3, { count: 2, includesParticipant: true })).toBe('LIMIT_REACHED');
  });

  it('ignores winner counts when the reward has no cap', () => {
    const full = { count: 50, includesParticipant: false };
    expect(limitAllows(rule({ limitDuration: 'PER_MONTH', numberOfWinners: null }), 0, full)).toBeNull();
    expect(limitAllows(rule({ limitDuration: 'IN_TOTAL', numberOfWinners: 1 }), 0, full)).toBeNull();
  });
});

describe('hasWinnersCap', () => {
  it('applies only to PER_MONTH rewards with numberOfWinners', () => {
    expect(hasWinnersCap(rule({ limitDuration: 'PER_MONTH', numberOfWinners: 5 }))).toBe(true);
    expect(hasWinnersCap(rule({ limitDuration: 'PER_MONTH', numberOfWinners: 0 }))).toBe(true);
    expect(hasWinnersCap(rule({ limitDuration: 'PER_MONTH', numberOfWinners: null }))).toBe(false);
    expect(hasWinnersCap(rule({ limitDuration: 'IN_TOTAL', numberOfWinners: 5 }))).toBe(false);
  });
});

describe('month keys (UTC)', () => {
  it('monthKey uses the UTC calendar month, whatever the offset of the input', () => {
    expect(monthKey(new Date('2024-01-31T23:30:00-05:00'))).toBe('2024-02');
    expect(monthKey(new Date('2024-03-01T00:30:00+02:00'))).toBe('2024-02');
    expect(monthKey(new Date('2024-12-31T23:59:59.999Z'))).toBe('2024-12');
    expect(monthKey(new Date('2025-01-01T00:00:00.000Z'))).toBe('2025-01');
  });

  it('previousMonthKey steps back one month, across the year', () => {
    expect(previousMonthKey('2024-01')).toBe('2023-12');
    expect(previousMonthKey('2024-03')).toBe('2024-02');
    expect(previousMonthKey('2024-10')).toBe('2024-09');
    expect(previousMonthKey('2024-12')).toBe('2024-11');
  });

  it('monthStart is the first instant of the month in UTC', () => {
    expect(monthStart('2024-02').toISOString()).toBe('2024-02-01T00:00:00.000Z');
  });

  it('manualClock moves only when told', () => {
    const clock = manualClock('2024-01-31T23:59:59.999Z');
    expect(monthKey(clock.now())).toBe('2024-01');
    clock.advance(1);
    expect(clock.now().toISOString()).toBe('2024-02-01T00:00:00.000Z');
    clock.set('2024-06-15T12:00:00Z');
    expect(monthKey(clock.now())).toBe('2024-06');
  });
});

describe('monthlyCountersAt', () => {
  const stored: MonthlyCounters = {
    countsMonth: '2024-01',
    monthlyLoyaltyActionCount: 5,
    prevMonthlyLoyaltyActionCount: 2,
    monthlyLoyaltyActionCountsPerReward: { rew_a: 3, rew_b: 2 },
  };

  it('leaves the figures alone in their own month', () => {
    expect(monthlyCountersAt(stored, '2024-01')).toEqual(stored);
  });

  it('moves the month to prev… and restarts from zero in the next month', () => {
    expect(monthlyCountersAt(stored, '2024-02')).toEqual({
      countsMonth: '2024-02',
      monthlyLoyaltyActionCount: 0,
      prevMonthlyLoyaltyActionCount: 5,
      monthlyLoyaltyActionCountsPerReward: {},
    });
  });

  it('rolls across a year boundary', () => {
    const dec = { ...stored, countsMonth: '2023-12' };
    expect(monthlyCountersAt(dec, '2024-01')).toMatchObject({
      countsMonth: '2024-01',
      monthlyLoyaltyActionCount: 0,
      prevMonthlyLoyaltyActionCount: 5,
    });
  });

  it('zeroes prev… when a month or more was skipped', () => {
    expect(monthlyCountersAt(stored, '2024-03')).toEqual({
      countsMonth: '2024-03',
      monthlyLoyaltyActionCount: 0,
      prevMonthlyLoyaltyActionCount: 0,
      monthlyLoyaltyActionCountsPerReward: {},
    });
  });

  it('changes nothing for a month earlier than the stored one', () => {
    expect(monthlyCountersAt(stored, '2023-12')).toEqual(stored);
  });

  it('does not mutate its input', () => {
    const copy = structuredClone(stored);
    monthlyCountersAt(stored, '2024-05');
    expect(stored).toEqual(copy);
  });
});

describe('countAction', () => {
  const base = {
    countsMonth: '2026-10',
    monthlyLoyaltyActionCount: 3,
    prevMonthlyLoyaltyActionCount: 1,
    monthlyLoyaltyActionCountsPerReward: { crew_a: 3 },
    loyaltyActionCount: 7,
    loyaltyActionCountsPerReward: { crew_a: 5, crew_b: 2 },
  };

  it('counts one more action in the same month, for the reward and overall, without changing its input', () => {
    const frozen = structuredClone(base);
    const { counters, total, monthly } = countAction(base, 'crew_a', '2026-10');
    expect({ total, monthly }).toEqual({ total: 6, monthly: 4 });
    expect(counters).toEqual({
      countsMonth: '2026-10',
      monthlyLoyaltyActionCount: 4,
      prevMonthlyLoyaltyActionCount: 1,
      monthlyLoyaltyActionCountsPerReward: { crew_a: 4 },
      loyaltyActionCount: 8,
      loyaltyActionCountsPerReward: { crew_a: 6, crew_b: 2 },
    });
    expect(base).toEqual(frozen);
  });

  it('rolls the month first: last month becomes prev, this month starts at one', () => {
    const { counters, total, monthly } = countAction(base, 'crew_b', '2026-11');
    expect({ total, monthly }).toEqual({ total: 3, monthly: 1 });
    expect(counters).toMatchObject({
      countsMonth: '2026-11',
      monthlyLoyaltyActionCount: 1,
      prevMonthlyLoyaltyActionCount: 3,
      monthlyLoyaltyActionCountsPerReward: { crew_b: 1 },
      loyaltyActionCount: 8,
    });
    expect(countAction(base, 'crew_b', '2027-01').counters.prevMonthlyLoyaltyActionCount).toBe(0);
  });
});

describe('frame ancestors of the portal', () => {
  it('takes https origins (with a wildcard subdomain) and http on this machine, lower case, without a path', () => {
    for (const ok of [
      'https://app.example.com',
      'https://*.example.com',
      'https://shop.example.co.uk:8443',
      'http://localhost:3000',
      'http://127.0.0.1',
    ]) {
      expect(frameAncestorProblem(ok), ok).toBeNull();
    }
  });

  it('refuses what could end the directive, paths, other schemes, upper case and bad ports', () => {
    for (const bad of [
      "https://a.example.com; script-src 'unsafe-inline'",
      'https://a.example.com,https://b.example.com',
      'https://a.example.com https://b.example.com',
      'https://a.example.com/path',
      'http://app.example.com',
      'https://App.Example.com',
      'https://user@example.com',
      '*',
      "'self'",
      'https://example.com:99999',
      '__proto__',
    ]) {
      expect(frameAncestorProblem(bad), bad).not.toBeNull();
    }
  });

  it("writes the directive: the origins, or 'none'", () => {
    expect(frameAncestorsDirective([])).toBe("frame-ancestors 'none'");
    expect(frameAncestorsDirective(['https://a.example.com', 'http://localhost:3000'])).toBe(
      'frame-ancestors https://a.example.com http://localhost:3000',
    );
  });
});
