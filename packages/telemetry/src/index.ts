export { type AcceptMetrics, type ApplyMetrics, acceptMetrics, applyMetrics } from './actions';
export { METRICS_REFUSALS, metricsAccess } from './auth';
export { LAG_BUCKETS, LATENCY_BUCKETS } from './buckets';
export { type AttemptOutcome, type DeliveryMetrics, deliveryMetrics } from './deliveries';
export { type HttpMetrics, httpMetrics } from './http';
export { type MetricsListenerOptions, type Refusal, startMetricsListener } from './listener';
export { type PartitionReading, partitionMetrics } from './partitions';
export { type PoolStats, poolMetrics, type ReplicaReading, replicaMetrics } from './pool';
export { QUEUE_STATES, type QueueLike, type QueueMetricsOptions, queueMetrics } from './queues';
export { createRegistry, type Registry } from './registry';
export {
  contextOf,
  currentTraceparent,
  inSpan,
  SpanKind,
  startChildSpan,
  startTracing,
  type Tracing,
  type TracingOptions,
} from './tracing';
