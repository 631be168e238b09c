import { type Ctx, markSent, outOfTime, settleCommit } from './context';

export type MicroBatchOptions<I, O> = {
  /** Runs one batch; answers one result per item, in the items' order. */
  run: (items: I[]) => Promise<O[]>;
  /**
   * Largest batch.
   * @defaultValue 64
   */
  maxSize?: number;
  /**
   * Longest an item waits for others before its batch runs, in ms.
   * @defaultValue 1
   */
  maxWaitMs?: number;
  /**
   * Batches run at once; while they run, new items gather into the next one, so load makes batches larger
   * rather than more numerous.
   * @defaultValue 2
   */
  maxInFlight?: number;
  /**
   * Set when `run` commits what it writes (a group commit): tells, from an item's result, whether its write
   * landed. Each submitter's `ctx.commit` is then marked sent when its batch runs and told the outcome.
   * @defaultValue none: `run` is not a commit
   */
  landed?: (result: O) => boolean;
};

/**
 * The caller an item is submitted for: its deadline and its commit state (see `Ctx`), and what names its
 * write (`CommitState.subject`).
 */
export type Submitter = Pick<Ctx, 'signal' | 'commit'> & { subject?: Record<string, unknown> };

type Pending<I, O> = {
  item: I;
  by: Submitter | undefined;
  resolve: (o: O) => void;
  reject: (e: unknown) => void;
};

/**
 * Group commit for any per-request step: items submitted within `maxWaitMs` of each other share one
 * `run`, each caller getting its own result (or the batch's error).
 */
export function microBatch<I, O>(opts: MicroBatchOptions<I, O>) {
  const maxSize = opts.maxSize ?? 64;
  const maxInFlight = opts.maxInFlight ?? 2;
  let pending: Pending<I, O>[] = [];
  let timer: NodeJS.Timeout | null = null;
  let inFlight = 0;

  const flush = () => {
    if (timer) {
      clearTimeout(timer);
      timer = null;
    }
    if (pending.length === 0 || inFlight >= maxInFlight) return;
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
    if (batch.length === 0) return flush();
    const landed = opts.landed;
    // From here the batch's statement is sent in this same turn: each member's write is in flight.
    if (landed) for (const p of batch) markSent(p.by?.commit, p.by?.subject);
    inFlight += 1;
    opts
      .run(batch.map((p) => p.item))
      .then(
        (results) => {
          for (const [i, p] of batch.entries()) {
            if (landed) settleCommit(p.by?.commit, landed(results[i]!));
            p.resolve(results[i]!);
          }
        },
        (error) => {
          for (const p of batch) {
            p.reject(landed ? settleCommit(p.by?.commit, { error }, p.by?.subject) : error);
          }
        },
      )
      .finally(() => {
        inFlight -= 1;
        flush();
      });
  };

  return {
    /** `by`: the caller, whose item is dropped if it stops waiting before its batch runs. */
    submit(item: I, by?: Submitter): Promise<O> {
      return new Promise<O>((resolve, reject) => {
        pending.push({ item, by, resolve, reject });
        if (pending.length >= maxSize) flush();
        else timer ??= setTimeout(flush, opts.maxWaitMs ?? 1);
      });
    },
  };
}
