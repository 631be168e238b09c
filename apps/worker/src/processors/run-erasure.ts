import type { Logger } from '@stampcard/config';
import { type Ctx, runErasureStep } from '@stampcard/core';
import type { Processor } from '@stampcard/jobs';

/**
 * `participant-erasure.run`: one bounded batch of a deleted participant's erasure (at most 2,000 events, or 500
 * stored answers, in one short transaction, committed), whose next batch's job is queued once it committed by
 * the ctx's after-commit hand-off. A crash or a failed enqueue after the commit leaves the next batch to the
 * relay's sweep (the `erasures` row says where it stands); the job itself, run again, finds its batch done and
 * does nothing.
 */
export function runErasure(ctx: Ctx, logger: Logger): Processor<'participant-erasure.run'> {
  return async (step) => {
    const batch = await runErasureStep(ctx, step);
    if (!batch.ran) return { ran: false };
    if (!batch.next)
      logger.info({ participantId: step.participantId, batches: step.batch + 1 }, 'erasure finished');
    return { ran: true, events: batch.events, answers: batch.answers };
  };
}
