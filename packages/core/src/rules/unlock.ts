export type UnlockRewardRule = {
  conversionsRequired: number;
  isUnlimited: boolean;
  limit: number;
  limitDuration: 'IN_TOTAL' | 'PER_MONTH';
  numberOfWinners: number | null;
};

/**
 * Whether a count has just reached a goal: every multiple of `conversionsRequired` earns the reward once.
 * The count is the all-time per-reward count for IN_TOTAL rewards, the month's for PER_MONTH.
 */
export function reachesGoal(reward: UnlockRewardRule, countAfter: number): boolean {
  const k = Math.max(1, reward.conversionsRequired);
  return countAfter > 0 && countAfter % k === 0;
}

/** The count the goal is measured on. */
export function goalCount(reward: UnlockRewardRule, counts: { total: number; monthly: number }): number {
  return reward.limitDuration === 'PER_MONTH' ? counts.monthly : counts.total;
}

export type UnlockRefusal = 'LIMIT_REACHED' | 'WINNERS_CAP_REACHED';

/**
 * Whether the limits let the participant earn the reward once more.
 * @param earnedBefore earnings of this reward by the participant: in total (IN_TOTAL) or this month (PER_MONTH)
 * @param monthWinners only for PER_MONTH rewards with `numberOfWinners`: distinct winners this month, and
 *   whether the participant is already one of them
 */
export function limitAllows(
  reward: UnlockRewardRule,
  earnedBefore: number,
  monthWinners?: { count: number; includesParticipant: boolean },
): UnlockRefusal | null {
  if (!reward.isUnlimited && earnedBefore >= reward.limit) return 'LIMIT_REACHED';
  if (reward.limitDuration === 'PER_MONTH' && reward.numberOfWinners !== null && monthWinners) {
    if (!monthWinners.includesParticipant && monthWinners.count >= reward.numberOfWinners) {
      return 'WINNERS_CAP_REACHED';
    }
  }
  return null;
}

/** Whether the monthly winners cap applies to a reward (its rows are then locked while deciding). */
export function hasWinnersCap(reward: UnlockRewardRule): boolean {
  return reward.limitDuration === 'PER_MONTH' && reward.numberOfWinners !== null;
}
