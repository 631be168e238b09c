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
};

type Pending<I, O> = { item: I; resolve: (o: O) => void; reject: (e: unknown) => void };

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
    const batch = pending.slice(0, maxSize);
    pending = pending.slice(maxSize);
    inFlight += 1;
    opts
      .run(batch.map((p) => p.item))
      .then(
        (results) => {
          for (const [i, p] of batch.entries()) p.resolve(results[i]!);
        },
        (err) => {
          for (const p of batch) p.reject(err);
        },
      )
      .finally(() => {
        inFlight -= 1;
        flush();
      });
  };

  return {
    submit(item: I): Promise<O> {
      return new Promise<O>((resolve, reject) => {
        pending.push({ item, resolve, reject });
        if (pending.length >= maxSize) flush();
        else timer ??= setTimeout(flush, opts.maxWaitMs ?? 1);
      });
    },
  };
}
