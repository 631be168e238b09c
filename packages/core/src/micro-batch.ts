import { type Ctx, markSent, outOfTime, settleCommit } from './context';

type Shape<I, O> = {
  /** Runs one batch; answers one result per item, in the items' order. */
  run: (items: I[]) => Promise<O[]>;
  /**
   * Largest batch.
   * @defaultValue 64
   */
  maxSize?: number;
  /**
   * Longest an item waits for others before its batch runs, in ms. 0: none; the items submitted in the same
   * turn of the event loop share a batch, which runs right after it (while `maxInFlight` batches run, items
   * gather for the next one whatever this says).
   * @defaultValue 1
   */
  maxWaitMs?: number;
  /**
   * Names the batch's stages in each submitter's `spans`: `<name>-wait` (submitted → its batch sent) and
   * `<name>-run` (the batch's `run`).
   * @defaultValue none: no spans
   */
  name?: string;
  /**
   * Batches run at once; while they run, new items gather into the next one, so load makes batches larger
   * rather than more numerous.
   * @defaultValue 2
   */
  maxInFlight?: number;
};

export type MicroBatchOptions<I, O> = Shape<I, O> &
  (
    | {
        /**
         * Set when `run` commits what it writes (a group commit): tells, from an item's result, whether its
         * write landed. Each submitter's `ctx.commit` is then marked sent when its batch runs and told the
         * outcome. A failed group commit is not run again item by item (`retryAlone`): whether it landed may
         * be unknown.
         * @defaultValue none: `run` is not a commit
         */
        landed?: (result: O) => boolean;
        retryAlone?: false;
      }
    | {
        landed?: undefined;
        /**
         * When a batch of several items fails (a deadlock, one row that breaks a constraint), each of its
         * items is run again alone, one after the other, so that only the item at fault fails, with its own
         * error. `run` must then be safe to run again for an item (idempotent, or nothing kept on failure).
         * @defaultValue false: every item of a failed batch gets the batch's error
         */
        retryAlone: true;
        /**
         * Told of a batch of several items that failed, before they run again alone (to log it).
         * @defaultValue none
         */
        onBatchError?: (error: unknown, size: number) => void;
      }
  );

/**
 * The caller an item is submitted for: its deadline and its commit state (see `Ctx`), and what names its
 * write (`CommitState.subject`).
 */
export type Submitter = Pick<Ctx, 'signal' | 'commit' | 'spans'> & { subject?: Record<string, unknown> };

type Pending<I, O> = {
  item: I;
  by: Submitter | undefined;
  /** `performance.now()` at submit, when the submitter takes spans. */
  at: number;
  resolve: (o: O) => void;
  reject: (e: unknown) => void;
};

/**
 * Group commit for any per-request or per-job step: items submitted within `maxWaitMs` of each other share
 * one `run`, each caller getting its own result (or the batch's error, or with `retryAlone` its own).
 */
export function microBatch<I, O>(opts: MicroBatchOptions<I, O>) {
  const maxSize = opts.maxSize ?? 64;
  const maxInFlight = opts.maxInFlight ?? 2;
  const landed = opts.landed;
  const maxWaitMs = opts.maxWaitMs ?? 1;
  const named = opts.name;
  let pending: Pending<I, O>[] = [];
  let timer: NodeJS.Timeout | NodeJS.Immediate | null = null;
  const inFlight = new Set<Promise<void>>();

  /** The batch's fallback: each item alone, in turn, so a failure is its item's only. */
  const eachAlone = async (batch: Pending<I, O>[]) => {
    for (const p of batch) {
      try {
        const [result] = await opts.run([p.item]);
        p.resolve(result!);
      } catch (error) {
        p.reject(error);
      }
    }
  };

  const runBatch = async (batch: Pending<I, O>[]) => {
    // From here the batch's statement is sent in this same turn: each member's write is in flight.
    if (landed) for (const p of batch) markSent(p.by?.commit, p.by?.subject);
    const started = named ? performance.now() : 0;
    if (named) for (const p of batch) p.by?.spans?.(`${named}-wait`, started - p.at);
    const ran = () => {
      if (!named) return;
      const ms = performance.now() - started;
      for (const p of batch) p.by?.spans?.(`${named}-run`, ms);
    };
    let results: O[];
    try {
      results = await opts.run(batch.map((p) => p.item));
      ran();
    } catch (error) {
      ran();
      if (opts.retryAlone && batch.length > 1) {
        opts.onBatchError?.(error, batch.length);
        return eachAlone(batch);
      }
      for (const p of batch) {
        p.reject(landed ? settleCommit(p.by?.commit, { error }, p.by?.subject) : error);
      }
      return;
    }
    for (const [i, p] of batch.entries()) {
      if (landed) settleCommit(p.by?.commit, landed(results[i]!));
      p.resolve(results[i]!);
    }
  };

  /** Runs what is pending now, unless `maxInFlight` batches run: then when one of them ends. */
  const flush = (): void => {
    if (timer) {
      if (maxWaitMs > 0) clearTimeout(timer as NodeJS.Timeout);
      else clearImmediate(timer as NodeJS.Immediate);
      timer = null;
    }
    if (pending.length === 0 || inFlight.size >= maxInFlight) return;
    // An item whose caller stopped waiting while it queued is dropped here, before anything is sent: the
    // caller was told nothing was written, and nothing is.
    let taken = 0;
    const batch: Pending<I, O>[] = [];
    while (taken < pending.length && batch.length < maxSize) {
      const p = pending[taken++]!;
      if (p.by?.signal?.aborted) p.reject(outOfTime());
      else batch.push(p);
    }
    pending = pending.slice(taken);
    if (batch.length === 0) {
      flush();
      return;
    }
    const running = runBatch(batch).finally(() => {
      inFlight.delete(running);
      flush();
    });
    inFlight.add(running);
  };

  return {
    /** `by`: the caller, whose item is dropped if it stops waiting before its batch runs. */
    submit(item: I, by?: Submitter): Promise<O> {
      return new Promise<O>((resolve, reject) => {
        pending.push({ item, by, resolve, reject, at: named && by?.spans ? performance.now() : 0 });
        if (pending.length >= maxSize) flush();
        else timer ??= maxWaitMs > 0 ? setTimeout(flush, maxWaitMs) : setImmediate(flush);
      });
    },
    flush,
    /** Runs what is pending and waits for every batch under way (on shutdown). */
    async drain(): Promise<void> {
      flush();
      while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
    },
  };
}

export type MicroBatch<I, O> = ReturnType<typeof microBatch<I, O>>;
