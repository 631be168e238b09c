import { previousMonthKey } from '../clock';

export type MonthlyCounters = {
  countsMonth: string;
  monthlyLoyaltyActionCount: number;
  prevMonthlyLoyaltyActionCount: number;
  monthlyLoyaltyActionCountsPerReward: Record<string, number>;
};

/**
 * The monthly figures as they stand in `month`. Counters are stored for the month of their last write;
 * in a later month they move to `prev…` (the month right after) or to zero (a month or more skipped).
 * A `month` earlier than the stored one (a clock set back) changes nothing.
 */
export function monthlyCountersAt<T extends MonthlyCounters>(p: T, month: string): MonthlyCounters {
  if (p.countsMonth >= month) {
    return {
      countsMonth: p.countsMonth,
      monthlyLoyaltyActionCount: p.monthlyLoyaltyActionCount,
      prevMonthlyLoyaltyActionCount: p.prevMonthlyLoyaltyActionCount,
      monthlyLoyaltyActionCountsPerReward: p.monthlyLoyaltyActionCountsPerReward,
    };
  }
  const wasPrevious = previousMonthKey(month) === p.countsMonth;
  return {
    countsMonth: month,
    monthlyLoyaltyActionCount: 0,
    prevMonthlyLoyaltyActionCount: wasPrevious ? p.monthlyLoyaltyActionCount : 0,
    monthlyLoyaltyActionCountsPerReward: {},
  };
}
