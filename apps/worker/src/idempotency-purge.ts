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
   * Most rows one run deletes: one bounded statement, so a backlog takes several runs, never one long lock.
   * @defaultValue 1000
   */
  batchSize?: number;
};

/**
 * `Idempotency-Key` answers are kept 24 h (`idempotency_keys`): past that, a key is free again whether or not
 * its row is still there (the API's claim takes an expired row over), so purging is only housekeeping. The
 * worker runs it beside the relay: one process role, not every API process, sweeps.
 */
export function createIdempotencyPurge(opts: IdempotencyPurgeOptions) {
  const limit = opts.batchSize ?? 1000;
  // `runOnce()` answers how many rows a run deleted.
  return periodic(
    () => purgeIdempotencyKeys(opts.ctx.db, opts.ctx.clock.now(), limit),
    opts.intervalMs,
    (err) => opts.logger.error({ err }, 'idempotency key purge failed'),
  );
}
