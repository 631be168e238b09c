import {
  type Ctx,
  type Delivery,
  type DeliveryRequest,
  loadDeliveries,
  microBatch,
  recordSuccesses,
  type SkippedDelivery,
  type Success,
} from '@stampcard/core';

export type DeliveryBatching = {
  /** The message of one job, read with those of the other jobs starting in the same moment. */
  load(request: DeliveryRequest): Promise<Delivery | SkippedDelivery>;
  /** One plain success, written with those of the other deliveries finishing in the same moment. */
  writeSuccess(success: Success): Promise<void>;
};

/**
 * Group commit for the dispatcher's two statements per delivery: jobs that start within a millisecond of each
 * other share one read (`loadDeliveries`), and successes that come back together share one write
 * (`recordSuccesses`). Under load a statement carries dozens of deliveries instead of one; alone, a delivery
 * waits at most `maxWaitMs` for company. A success whose message is gone (deleted with its endpoint) records
 * nothing; a batch write that fails is retried one success at a time, so only the success at fault fails.
 */
export function createDeliveryBatching(
  ctx: Ctx,
  opts: {
    /**
     * Largest batch.
     * @defaultValue 64
     */
    maxSize?: number;
    /**
     * Longest a delivery waits for others, in ms.
     * @defaultValue 1
     */
    maxWaitMs?: number;
  } = {},
): DeliveryBatching {
  const shape = { maxSize: opts.maxSize ?? 64, maxWaitMs: opts.maxWaitMs ?? 1, maxInFlight: 2 };
  const loads = microBatch<DeliveryRequest, Delivery | SkippedDelivery>({
    ...shape,
    run: (requests) => loadDeliveries(ctx, requests),
  });
  const successes = microBatch<Success, unknown>({
    ...shape,
    run: async (list) => {
      try {
        await recordSuccesses(ctx, list);
        return list.map(() => null);
      } catch (err) {
        if (list.length === 1) return [err];
        return Promise.all(
          list.map((one) =>
            recordSuccesses(ctx, [one]).then(
              () => null,
              (e: unknown) => e,
            ),
          ),
        );
      }
    },
  });
  return {
    load: (request) => loads.submit(request),
    async writeSuccess(success) {
      const err = await successes.submit(success);
      if (err) throw err;
    },
  };
}
