import { type MonthlyCounters, monthlyCountersAt } from './months';

/** A participant's loyalty-action counters: all-time, per reward, and this month's. */
export type ActionCounters = MonthlyCounters & {
  loyaltyActionCount: number;
  loyaltyActionCountsPerReward: Record<string, number>;
};

/**
 * The counters after one more action for `rewardId` in `month` (UTC `YYYY-MM`): the month rolls first (see
 * `monthlyCountersAt`), then every count goes up by one. Answers the new counters and the reward's all-time
 * and monthly counts, which the unlock rule reads. Pure: the input is not changed.
 */
export function countAction(
  p: ActionCounters,
  rewardId: string,
  month: string,
): { counters: ActionCounters; total: number; monthly: number } {
  const rolled = monthlyCountersAt(p, month);
  const total = (p.loyaltyActionCountsPerReward[rewardId] ?? 0) + 1;
  const monthly = (rolled.monthlyLoyaltyActionCountsPerReward[rewardId] ?? 0) + 1;
  return {
    counters: {
      ...rolled,
      monthlyLoyaltyActionCount: rolled.monthlyLoyaltyActionCount + 1,
      monthlyLoyaltyActionCountsPerReward: {
        ...rolled.monthlyLoyaltyActionCountsPerReward,
        [rewardId]: monthly,
      },
      loyaltyActionCount: p.loyaltyActionCount + 1,
      loyaltyActionCountsPerReward: { ...p.loyaltyActionCountsPerReward, [rewardId]: total },
    },
    total,
    monthly,
  };
}
