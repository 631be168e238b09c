import type { Logger } from '@stampcard/config';
import { type Ctx, runImportStep } from '@stampcard/core';
import type { Processor } from '@stampcard/jobs';

/**
 * `participant-import.run`: one batch of a participant import (the counting pass, or up to 500 rows) in one
 * transaction, committed with the import's cursor; the next batch's job is queued once it committed, by the
 * ctx's after-commit hand-off. A worker killed mid-batch leaves nothing of it (the batch runs again from the
 * same cursor); one killed after the commit leaves the next batch to the relay's sweep; a job run twice finds
 * its batch done and does nothing.
 */
export function runImport(ctx: Ctx, logger: Logger): Processor<'participant-import.run'> {
  return async (step) => {
    const batch = await runImportStep(ctx, step);
    if (!batch.ran) return { ran: false };
    if (!batch.next)
      logger.info(
        { importId: step.importId, status: batch.status, batches: step.batch + 1 },
        'import finished',
      );
    return { ran: true, rows: batch.rows, status: batch.status };
  };
}
