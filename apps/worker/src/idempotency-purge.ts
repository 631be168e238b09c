import type { Logger } from '@stampcard/config';
import type { Ctx } from '@stampcard/core';
import { purgeIdempotencyKeys } from '@stampcard/db';
import { periodic } from '@stampcard/jobs';

export type IdempotencyPurgeOptions = {
  ctx: Ctx;
  logger: Logger;
  /** Pause between runs, in ms. */
  intervalMs: number;
  /**
   * Most rows one batch deletes: one bounded statement, so purging never holds one long lock.
   * @defaultValue 1000
   */
  batchSize?: number;
  /**
   * Pause between two batches of a run, in ms: the purge yields to the event loop and to the database's other
   * work, whatever the backlog.
   * @defaultValue 10
   */
  batchPauseMs?: number;
};

/** What one run of the purge did. */
export type IdempotencyPurgeRun = { deleted: number; batches: number };

/**
 * `Idempotency-Key` answers are kept 24 h (`idempotency_keys`): past that, a key is free again whether or not
 * its row is still there (the API's claim takes an expired row over), so purging is only housekeeping. The
 * worker runs it beside the relay: one process role, not every API process, sweeps. Each run deletes expired
 * rows in batches until none is left (a busy caller expires far more than a batch a minute), pausing between
 * batches, and stops after the batch in hand when the worker shuts down.
 */
export function createIdempotencyPurge(opts: IdempotencyPurgeOptions) {
  const limit = opts.batchSize ?? 1000;
  const pauseMs = opts.batchPauseMs ?? 10;
  let stopping = false;
  // Stopping cuts the pause between two batches short.
  let wake: (() => void) | null = null;
  const pause = () =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, pauseMs);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    }).finally(() => {
      wake = null;
    });
  const run = async (): Promise<IdempotencyPurgeRun> => {
    const done: IdempotencyPurgeRun = { deleted: 0, batches: 0 };
    while (!stopping) {
      const deleted = await purgeIdempotencyKeys(opts.ctx.db, opts.ctx.clock.now(), limit);
      done.deleted += deleted;
      done.batches += 1;
      if (deleted < limit) break;
      await pause();
    }
    if (done.batches > 1) opts.logger.info(done, 'expired idempotency keys purged');
    return done;
  };
  const timer = periodic(run, opts.intervalMs, (err) =>
    opts.logger.error({ err }, 'idempotency key purge failed'),
  );
  return {
    /** One run now (sharing the one under way): every expired row, in batches. */
    runOnce: timer.runOnce,
    start() {
      stopping = false;
      timer.start();
    },
    /** Stops the timer, and the run under way after its current batch. */
    async stop() {
      stopping = true;
      wake?.();
      await timer.stop();
    },
  };
}
