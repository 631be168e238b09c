import type { Logger } from '@stampcard/config';
import {
  type Ctx,
  findStaleQueuedActions,
  findStalledErasures,
  findStalledImports,
  stillQueuedActions,
} from '@stampcard/core';
import {
  actionsInBatchJobs,
  ensureJobs,
  erasureJobId,
  importJobId,
  periodic,
  type Queues,
} from '@stampcard/jobs';

export type RelayOptions = {
  ctx: Ctx;
  queues: Queues;
  logger: Logger;
  /** An action younger than this is left to the API's own enqueue, in ms. */
  graceMs: number;
  /** Pause between sweeps, in ms. */
  intervalMs: number;
};

/**
 * Redis is the transport, PostgreSQL the record. The relay sweeps the ledger for accepted actions that are
 * still QUEUED after the grace period and makes sure each has a live job: missing (Redis lost its data, or
 * the API's enqueue failed) → added again; failed (retries exhausted) → retried. Erasures too: a RUNNING one
 * whose last batch is older than the grace period gets the job of its next batch (a worker died between a
 * batch's commit and the next job's enqueue, or the API's enqueue failed); imports under way the same.
 */
export function createRelay(opts: RelayOptions) {
  async function sweep(): Promise<number> {
    const stale = await findStaleQueuedActions(opts.ctx, opts.graceMs);
    // An action still waiting in a batch job (a backlog) is not lost.
    const inBatches = stale.length > 0 ? await actionsInBatchJobs(opts.queues) : new Set<string>();
    // Read again after the look-up: a batch job that applied its actions and ended between the ledger's read and
    // the look-up took them out of both (a worker far behind makes that common); those are not queued again.
    const ids = await stillQueuedActions(
      opts.ctx,
      stale.filter((id) => !inBatches.has(id)),
    );
    // Missing (Redis lost it, or the API's enqueue failed), failed (retries exhausted) or completed before the
    // ledger row committed: each is added again. A job that waits, runs or is delayed is left alone.
    const { added, restarted } = await ensureJobs(
      opts.queues,
      'loyalty-action.apply',
      ids.map((actionId) => ({ payload: { actionId }, jobId: actionId })),
    );
    if (added > 0) {
      opts.logger.warn(
        { requeued: added - restarted, retried: restarted },
        'relay put accepted actions back in the queue',
      );
    }
    // Its own failure is logged and never costs the actions' sweep its answer: the next sweep tries again.
    await resumeErasures().catch((err) => opts.logger.error({ err }, 'relay could not resume erasures'));
    await resumeImports().catch((err) => opts.logger.error({ err }, 'relay could not resume imports'));
    return added;
  }
  async function resumeErasures() {
    const stalled = await findStalledErasures(opts.ctx, opts.graceMs);
    const { added } = await ensureJobs(
      opts.queues,
      'participant-erasure.run',
      stalled.map((payload) => ({ payload, jobId: erasureJobId(payload) })),
    );
    if (added > 0) opts.logger.warn({ erasures: added }, 'relay resumed erasures');
  }
  async function resumeImports() {
    const stalled = await findStalledImports(opts.ctx, opts.graceMs);
    const { added } = await ensureJobs(
      opts.queues,
      'participant-import.run',
      stalled.map((payload) => ({ payload, jobId: importJobId(payload) })),
    );
    if (added > 0) opts.logger.warn({ imports: added }, 'relay resumed imports');
  }
  // `runOnce()` answers how many actions a sweep put back.
  return periodic(sweep, opts.intervalMs, (err) => opts.logger.error({ err }, 'relay sweep failed'));
}
