import type { AppliedAction } from '@stampcard/core';

type Pending = { id: string; resolve: (r: AppliedAction | null) => void; reject: (e: unknown) => void };

export type BatcherOptions = {
  /** Applies a batch in one transaction; answers the actions it applied (skipped ones are absent). */
  apply: (ids: string[]) => Promise<AppliedAction[]>;
  /** Largest batch. */
  maxSize: number;
  /** Longest an id waits for others before its batch is applied, in ms. */
  maxWaitMs: number;
  /**
   * Batches applied at once. While they commit, new ids gather into the next batch (group commit), so a
   * deep queue makes batches larger rather than more numerous: they all update the same campaign row.
   * Default 2.
   */
  maxInFlight?: number;
  onBatchError?: (err: unknown, size: number) => void;
};

/**
 * Groups the actions of concurrently processed jobs into one transaction each few milliseconds: with a deep
 * queue a worker applies up to `maxSize` actions per commit instead of one. When a batch fails (a deadlock,
 * a bad row), each of its actions is tried alone, so one failure fails only its own job.
 */
export class ActionBatcher {
  private pending: Pending[] = [];
  private timer: NodeJS.Timeout | null = null;
  private inFlight = new Set<Promise<void>>();

  constructor(private readonly opts: BatcherOptions) {}

  /** Resolves with the action's result once its batch commits; null when it was not QUEUED any more. */
  submit(id: string): Promise<AppliedAction | null> {
    return new Promise((resolve, reject) => {
      this.pending.push({ id, resolve, reject });
      if (this.pending.length >= this.opts.maxSize) this.flush();
      else if (!this.timer) this.timer = setTimeout(() => this.flush(), this.opts.maxWaitMs);
    });
  }

  /** Applies what is pending now, unless enough batches are under way: then when one of them ends. */
  flush(): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    if (this.pending.length === 0 || this.inFlight.size >= (this.opts.maxInFlight ?? 2)) return;
    const batch = this.pending.splice(0, this.opts.maxSize);
    const run = this.run(batch).finally(() => {
      this.inFlight.delete(run);
      this.flush();
    });
    this.inFlight.add(run);
  }

  /** Waits for every batch under way (used on shutdown). */
  async drain(): Promise<void> {
    this.flush();
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  private async run(batch: Pending[]): Promise<void> {
    try {
      settle(batch, await this.opts.apply(batch.map((p) => p.id)));
      return;
    } catch (err) {
      if (batch.length === 1) {
        batch[0]!.reject(err);
        return;
      }
      this.opts.onBatchError?.(err, batch.length);
    }
    for (const p of batch) {
      try {
        settle([p], await this.opts.apply([p.id]));
      } catch (err) {
        p.reject(err);
      }
    }
  }
}

function settle(batch: Pending[], results: AppliedAction[]) {
  const byId = new Map(results.map((r) => [r.id, r]));
  for (const p of batch) p.resolve(byId.get(p.id) ?? null);
}
