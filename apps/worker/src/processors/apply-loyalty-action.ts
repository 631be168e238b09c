import { jobs } from '@stampcard/jobs';
import { type Job, UnrecoverableError } from 'bullmq';
import type { ActionBatcher } from '../batcher';

/**
 * `loyalty-action.apply`: re-validates the payload (an invalid one will never succeed, so it is not retried)
 * and hands the action to the batcher. Applying is idempotent: a job delivered twice changes nothing the
 * second time.
 */
export function applyLoyaltyActionProcessor(batcher: ActionBatcher) {
  return async (job: Job) => {
    const parsed = jobs.applyLoyaltyAction.payload.safeParse(job.data);
    if (!parsed.success) throw new UnrecoverableError(`Invalid payload: ${parsed.error.message}`);
    const result = await batcher.submit(parsed.data.actionId);
    return result ?? { id: parsed.data.actionId, skipped: 'already applied' };
  };
}
