import type { Logger } from '@stampcard/config';
import type { Ctx } from '@stampcard/core';
import { type MaintenanceResult, maintainPartitions, type RetentionPolicy } from '@stampcard/db';
import { periodic } from '@stampcard/jobs';
import type postgres from 'postgres';

export type PartitionMaintenanceOptions = {
  ctx: Ctx;
  /** The pool maintenance takes its connection from. */
  sql: postgres.Sql;
  logger: Logger;
  /** How long each kind of row is kept, in ms (`EVENT_RETENTION_DAYS`, `ATTEMPT_RETENTION_DAYS`, `AUDIT_RETENTION_DAYS`; keys 24 h). */
  policy: RetentionPolicy;
  /** Pause between runs, in ms. */
  intervalMs: number;
};

/**
 * The partitioned tables' upkeep, beside the relay (and once at start): the next partitions made ahead, those
 * past retention dropped whole (`maintainPartitions`; never a bulk DELETE). With several workers, one runs it at
 * a time; the others skip their turn. What failed (a lock not granted in time) is logged by partition and error
 * code and tried again on the next run.
 */
export function createPartitionMaintenance(opts: PartitionMaintenanceOptions) {
  return periodic(
    async (): Promise<MaintenanceResult | null> => {
      const done = await maintainPartitions(opts.sql, opts.ctx.clock.now(), opts.policy);
      if (!done) return null;
      if (done.made.length > 0 || done.dropped.length > 0 || done.expired.length > 0)
        opts.logger.info(
          { made: done.made, dropped: done.dropped, expired: done.expired },
          'partitions made ahead and dropped past retention',
        );
      if (done.failed.length > 0)
        opts.logger.warn({ failed: done.failed }, 'partition maintenance left work for its next run');
      return done;
    },
    opts.intervalMs,
    (err) => opts.logger.error({ err }, 'partition maintenance failed'),
  );
}
