import {
  type Ctx,
  type Delivery,
  type DeliveryRequest,
  loadDeliveries,
  microBatch,
  recordSuccesses,
  type Scheduled,
  type SkippedDelivery,
  type Success,
} from '@stampcard/core';

export type DeliveryBatching = {
  /** The message of one job, read with those of the other jobs starting in the same moment. */
  load(request: DeliveryRequest): Promise<Delivery | SkippedDelivery>;
  /**
   * One plain success, written with those of the other deliveries finishing in the same moment. Answers the
   * messages its write made due (the next ordered message of its participant), to schedule.
   */
  writeSuccess(success: Success): Promise<Scheduled[]>;
};

/**
 * Group commit for the dispatcher's two statements per delivery: jobs that start within a millisecond of each
 * other share one read (`loadDeliveries`), and successes that come back together share one write
 * (`recordSuccesses`). Under load a statement carries dozens of deliveries instead of one; alone, a delivery
 * waits at most `maxWaitMs` for company. A success whose message is gone (deleted with its endpoint) records
 * nothing; a batch write that fails is written again one success at a time (`retryAlone`), so only the success
 * at fault fails.
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
  const loads = microBatch<DeliveryRequest, Delivery | SkippedDelivery>({
    ...opts,
    run: (requests) => loadDeliveries(ctx, requests),
  });
  const successes = microBatch<Success, Scheduled[]>({
    ...opts,
    retryAlone: true,
    run: async (list) => {
      // Each made-due message goes back to the success of its participant, to be scheduled once.
      const released = await recordSuccesses(ctx, list);
      const byKey = new Map(released.map((r) => [`${r.endpointId}\n${r.participantId}`, r]));
      return list.map((x) => {
        const next = x.orderedParticipantId && byKey.get(`${x.endpointId}\n${x.orderedParticipantId}`);
        return next ? [next] : [];
      });
    },
  });
  return {
    load: (request) => loads.submit(request),
    writeSuccess: (success) => successes.submit(success),
  };
}
