import type { Processor } from '@stampcard/jobs';
import type { ActionBatcher } from '../batcher';

/**
 * `loyalty-action.apply`: hands the action to the batcher, which applies the actions of concurrent jobs in
 * one transaction. Applying is idempotent: a job delivered twice changes nothing the second time.
 */
export function applyLoyaltyAction(batcher: ActionBatcher): Processor<'loyalty-action.apply'> {
  return async ({ actionId }) =>
    (await batcher.submit(actionId)) ?? { id: actionId, skipped: 'already applied' };
}
