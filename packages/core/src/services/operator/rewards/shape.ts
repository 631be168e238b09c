import { validationError } from '../../../errors';
import type { RewardRow } from '../../../serialize';

export type RewardInput = Partial<Omit<RewardRow, 'id' | 'campaignId' | 'createdAt'>>;

/** Rules across a reward's fields, checked on the reward as it would be stored. */
export function checkRewardShape(r: RewardInput) {
  const issues = [];
  if (r.limitDuration !== 'PER_MONTH' && r.numberOfWinners != null) {
    issues.push({
      location: 'body',
      param: 'numberOfWinners',
      value: r.numberOfWinners,
      msg: 'applies only when limitDuration is PER_MONTH',
    });
  }
  if (issues.length) throw validationError(issues);
}
