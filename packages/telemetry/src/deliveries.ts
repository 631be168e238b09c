import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { LAG_BUCKETS, LATENCY_BUCKETS } from './buckets';

/** `succeeded`: a 2xx; `throttled`: a 429/503 with Retry-After; `failed`: anything else, or no answer. */
export type AttemptOutcome = 'succeeded' | 'throttled' | 'failed';

/** What a dispatcher counts of the webhooks it sends. */
export function deliveryMetrics(registry: Registry) {
  const attempts = new Counter({
    name: 'stampcard_webhook_attempts_total',
    help: 'Webhook delivery attempts, by outcome and, when failed, the class of the failure (`HTTP_STATUS`, `TIMEOUT`…)',
    labelNames: ['outcome', 'error_class'] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'stampcard_webhook_attempt_duration_seconds',
    help: 'Duration of webhook delivery attempts, from the request sent to the answer read, in seconds',
    labelNames: ['outcome'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  const settled = new Counter({
    name: 'stampcard_webhook_messages_settled_total',
    help: 'Webhook messages whose schedule ended: `SUCCEEDED`, `FAILED` (every attempt failed: a dead letter), `HELD` (the attempt disabled the endpoint)',
    labelNames: ['status'] as const,
    registers: [registry],
  });
  const lag = new Histogram({
    name: 'stampcard_webhook_delivery_lag_seconds',
    help: 'From an event recorded (the loyalty action applied) to its webhook delivered (2xx), retries included, replays left out, in seconds',
    buckets: LAG_BUCKETS,
    registers: [registry],
  });
  // What `watchLanes` was last given: the dispatcher started last in this process.
  let jobsWaiting = () => 0;
  new Gauge({
    name: 'stampcard_webhook_batch_jobs_waiting',
    help: "Batch delivery jobs waiting in place for room in their endpoint's lane, in this process",
    registers: [registry],
    collect() {
      this.set(jobsWaiting());
    },
  });
  const steppedAside = new Counter({
    name: 'stampcard_webhook_batch_jobs_stepped_aside_total',
    help: "Batch delivery jobs put back for later because their endpoint's lane had no room in time (a slow or hanging endpoint, or too many jobs waiting)",
    registers: [registry],
  });
  return {
    attempt(outcome: AttemptOutcome, errorClass: string | null, seconds: number) {
      attempts.inc({ outcome, error_class: errorClass ?? '' });
      duration.observe({ outcome }, seconds);
    },
    settled(status: 'SUCCEEDED' | 'FAILED' | 'HELD') {
      settled.inc({ status });
    },
    delivered(recordedAt: Date, now: Date) {
      lag.observe(Math.max(0, now.getTime() - recordedAt.getTime()) / 1000);
    },
    /** Where the gauge of batch jobs waiting in place reads from (a dispatcher's lanes). */
    watchLanes(waiting: () => number) {
      jobsWaiting = waiting;
    },
    /** A batch job found no room in its endpoint's lane in time, and was put back for later. */
    batchSteppedAside() {
      steppedAside.inc();
    },
  };
}
export type DeliveryMetrics = ReturnType<typeof deliveryMetrics>;
