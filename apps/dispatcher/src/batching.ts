import {
  type Claim,
  type Ctx,
  claimDeliveries,
  type Delivery,
  type DeliveryRequest,
  loadDeliveries,
  microBatch,
  recordSuccesses,
  releaseClaims,
  type Scheduled,
  type SkippedDelivery,
  type Success,
} from '@stampcard/core';

export type DeliveryBatching = {
  /** How long a claim holds a message, in ms (`claimLeaseMs`): the claims taken as a batch is loaded too. */
  leaseMs: number;
  /** The message of one job, read with those of the other jobs starting in the same moment. */
  load(request: DeliveryRequest): Promise<Delivery | SkippedDelivery>;
  /**
   * One plain success, written with those of the other deliveries finishing in the same moment. Answers the
   * messages its write made due (the next ordered message of its participant), to schedule.
   */
  writeSuccess(success: Success): Promise<Scheduled[]>;
  /**
   * Claims one message for the attempt about to be sent (`claimDeliveries`), with those of the other deliveries
   * about to send in the same moment: whether this delivery may send it.
   */
  claim(claim: Claim): Promise<boolean>;
  /**
   * Ends a claim of this process's, taken ahead of an attempt that stepped aside before its request went
   * (`releaseClaims`), with those of the others stepping aside in the same moment.
   */
  release(claim: Claim): Promise<void>;
};

/**
 * How long a message of a batch of several waits for a slot of its endpoint's window, when the endpoint is
 * healthy (its window whole), in ms: its batch's own deliveries free them as their answers come, and with the
 * lanes bounded the job slot held meanwhile is not taken from other endpoints. A slow endpoint's messages (its
 * window narrowed by timeouts), and a job of one message, wait `WINDOW_WAIT_MS`, then step aside.
 */
export const BATCH_WINDOW_WAIT_MS = 2000;

/** What a claim holds past the attempt's timeout and its window's wait: a pause, the excerpt, a slow loop. */
const CLAIM_MARGIN_MS = 5000;

/**
 * How long a dispatcher's claim on a message holds (`claimDeliveries`), in ms: an attempt's request ends within
 * the timeout (connection, look-up, status and the excerpt it reads meanwhile; the excerpt waits 500 ms at most
 * once the status is in); a batch's message is claimed before it waits for its endpoint's window
 * (`BATCH_WINDOW_WAIT_MS` at most, then 250 ms at most for a pause, or it steps aside and ends its claim); and
 * `CLAIM_MARGIN_MS` more leave room for those and for a slow event loop before the request goes. A dispatcher
 * killed mid-attempt leaves its message to the next after this long.
 */
export const claimLeaseMs = (timeoutMs: number) => timeoutMs + BATCH_WINDOW_WAIT_MS + CLAIM_MARGIN_MS;

/**
 * Group commit for the dispatcher's three statements per delivery (and the release of a claim taken ahead of an
 * attempt that stepped aside): jobs that start within a millisecond of each
 * other share one read (`loadDeliveries`), deliveries about to send share one claim (`claimDeliveries`), and
 * successes that come back together share one write (`recordSuccesses`), one at a time. Under load a statement carries dozens
 * of deliveries instead of one; alone, a delivery waits at most `maxWaitMs` for company. A success whose message is gone (deleted with its endpoint) records
 * nothing; a batch write that fails is written again one success at a time (`retryAlone`), so only the success
 * at fault fails. A claim of several messages that fails (a deadlock with another statement that locks some of
 * them in another order) is made again one message at a time, so its deliveries go on instead of failing.
 */
export function createDeliveryBatching(
  ctx: Ctx,
  opts: {
    /** How long a claim holds a message, in ms: longer than an attempt can take (see `claimLeaseMs`). */
    leaseMs: number;
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
  },
): DeliveryBatching {
  const { leaseMs, ...sizes } = opts;
  const loads = microBatch<DeliveryRequest, Delivery | SkippedDelivery>({
    ...sizes,
    run: (requests) => loadDeliveries(ctx, requests),
  });
  const claims = microBatch<Claim, boolean>({
    ...sizes,
    // A claim of one message holds no other row while it waits, so claimed alone it cannot deadlock.
    retryAlone: true,
    run: (list) => claimDeliveries(ctx, list, leaseMs),
  });
  const releases = microBatch<Claim, undefined>({
    ...sizes,
    retryAlone: true,
    run: async (list) => {
      await releaseClaims(ctx, list);
      return list.map(() => undefined);
    },
  });
  const successes = microBatch<Success, Scheduled[]>({
    ...sizes,
    // One write in flight: the successes that come back meanwhile wait for it and go together in the next.
    maxInFlight: 1,
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
    leaseMs,
    load: (request) => loads.submit(request),
    writeSuccess: (success) => successes.submit(success),
    claim: (claim) => claims.submit(claim),
    release: (claim) => releases.submit(claim),
  };
}
