import { type AppliedAction, microBatch } from '@stampcard/core';
import { contextOf, currentTraceparent } from '@stampcard/telemetry';

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
   * @defaultValue 2
   */
  maxInFlight?: number;
  /**
   * Told of a batch that failed, before its actions are applied one by one.
   * @defaultValue none
   */
  onBatchError?: (err: unknown, size: number) => void;
};

/**
 * Groups the actions of concurrently processed jobs into one transaction each few milliseconds (`microBatch`):
 * with a deep queue a worker applies up to `maxSize` actions per commit instead of one. When a batch fails (a
 * deadlock, a bad row), each of its actions is tried alone, so one failure fails only its own job. `submit`
 * resolves with the action's result once its batch commits, null when it was not QUEUED any more.
 */
export function createActionBatcher(opts: BatcherOptions) {
  return microBatch<string, AppliedAction | null>({
    maxSize: opts.maxSize,
    maxWaitMs: opts.maxWaitMs,
    maxInFlight: opts.maxInFlight,
    retryAlone: true,
    onBatchError: opts.onBatchError,
    run: async (ids) => {
      const byId = new Map((await opts.apply(ids)).map((r) => [r.id, r]));
      return ids.map((id) => byId.get(id) ?? null);
    },
  });
}

export type ActionBatcher = ReturnType<typeof createActionBatcher>;

/**
 * With tracing on: the `traceparent` of each action being applied in a span of its request's trace (from
 * `begin`, inside that span, to `end`), so that its events' fan-out is handed on in the same trace.
 */
export type ActionTraces = {
  begin(actionId: string): void;
  end(actionId: string): void;
  get(actionId: string): string | undefined;
  parentOf(traceparent: string): ReturnType<typeof contextOf>;
};

export function actionTraces(): ActionTraces {
  const spans = new Map<string, string>();
  return {
    begin: (id) => {
      const traceparent = currentTraceparent();
      if (traceparent) spans.set(id, traceparent);
    },
    end: (id) => void spans.delete(id),
    get: (id) => spans.get(id),
    parentOf: contextOf,
  };
}
