import type { Processor } from '@stampcard/jobs';
import type { ActionBatcher } from '../batcher';

/**
 * `loyalty-action-batch.apply`: hands each action to the batcher, as if each were its own job, and ends when
 * all are applied (or skipped: not QUEUED any more). A job run twice changes nothing the second time.
 */
export function applyLoyaltyActions(batcher: ActionBatcher): Processor<'loyalty-action-batch.apply'> {
  return async ({ actionIds }) => {
    const results = await Promise.all(actionIds.map((id) => batcher.submit(id)));
    return { actions: actionIds.length, applied: results.filter((r) => r !== null).length };
  };
}
