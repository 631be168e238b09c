/**
 * Histogram buckets in seconds. `LATENCY_BUCKETS` are OpenTelemetry's advised boundaries for
 * `http.server.request.duration` (5 ms to 10 s); `LAG_BUCKETS` reach further, for work that waits in a queue
 * or for a retry (10 ms to an hour).
 */
export const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10];
export const LAG_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600];
