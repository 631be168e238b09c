import { safeError } from '@stampcard/config';
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
    const result = await batcher.submit(parsed.data.actionId).catch((err: unknown) => {
      throw jobFailure(err);
    });
    return result ?? { id: parsed.data.actionId, skipped: 'already applied' };
  };
}

/**
 * BullMQ keeps a failed job's message and stack in Redis and shows them on the dashboard. A database error's
 * message carries the query's parameters (participants' emails, names, metadata), so the job fails with its
 * class and code only; the full error goes to the log through its safe serializer.
 */
export function jobFailure(err: unknown): Error {
  const info = safeError(err);
  const causes: string[] = [];
  for (let at: Record<string, unknown> | undefined = info; at; at = at.cause as typeof info | undefined) {
    causes.push([at.type, at.code, at.constraint].filter(Boolean).join(' '));
  }
  return new Error(`apply failed: ${causes.join(' <- ')}`, { cause: err });
}
