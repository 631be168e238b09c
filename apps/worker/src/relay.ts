import type { Logger } from '@stampcard/config';
import { type Ctx, findStaleQueuedActions } from '@stampcard/core';
import { enqueueActions, type Queues } from '@stampcard/jobs';

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
 * the API's enqueue failed) → added again; failed (retries exhausted) → retried.
 */
export function createRelay(opts: RelayOptions) {
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<number> | null = null;

  async function sweep(): Promise<number> {
    const ids = await findStaleQueuedActions(opts.ctx, opts.graceMs);
    const missing: string[] = [];
    let retried = 0;
    for (const id of ids) {
      const job = await opts.queues.loyaltyActions.getJob(id);
      if (!job) {
        missing.push(id);
        continue;
      }
      const state = await job.getState();
      if (state === 'failed') {
        await job.retry('failed');
        retried += 1;
      } else if (state === 'completed' || state === 'unknown') {
        // Completed yet still QUEUED in the ledger: the job ran before the ledger row committed. Run it again.
        await job.remove().catch(() => {});
        missing.push(id);
      }
    }
    await enqueueActions(opts.queues, missing);
    if (missing.length + retried > 0) {
      opts.logger.warn({ requeued: missing.length, retried }, 'relay put accepted actions back in the queue');
    }
    return missing.length + retried;
  }

  return {
    /** One sweep now; answers how many actions it put back. Concurrent calls share one sweep. */
    runOnce(): Promise<number> {
      running ??= sweep().finally(() => {
        running = null;
      });
      return running;
    },
    start() {
      const tick = async () => {
        try {
          await this.runOnce();
        } catch (err) {
          opts.logger.error({ err }, 'relay sweep failed');
        }
        if (timer) timer = setTimeout(tick, opts.intervalMs);
      };
      timer = setTimeout(tick, opts.intervalMs);
    },
    async stop() {
      if (timer) clearTimeout(timer);
      timer = null;
      await running?.catch(() => {});
    },
  };
}
