import { Histogram, type Registry } from 'prom-client';
import { LATENCY_BUCKETS } from './buckets';

/**
 * The API's requests, by OpenTelemetry's HTTP server conventions: `http_server_request_duration_seconds`
 * labelled with the method, the route's template (never the path a caller sent: `/v1/campaign/:id/…`, or
 * `unmatched`) and the status code. Every label comes from a bounded set, whatever the callers send.
 */
export function httpMetrics(registry: Registry) {
  const duration = new Histogram({
    name: 'http_server_request_duration_seconds',
    help: 'Duration of HTTP requests the API answered, from the first middleware to the answer, in seconds',
    labelNames: ['http_request_method', 'http_route', 'http_response_status_code'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  return {
    /** One answered request: its method (a known one, or `_OTHER`), route template and status. */
    observe(method: string, route: string, status: number, seconds: number) {
      duration.observe(
        { http_request_method: knownMethod(method), http_route: route, http_response_status_code: status },
        seconds,
      );
    },
  };
}

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
/** OpenTelemetry's rule: a method outside the known set is `_OTHER`, so a caller cannot add label values. */
const knownMethod = (method: string) => (METHODS.has(method) ? method : '_OTHER');

export type HttpMetrics = ReturnType<typeof httpMetrics>;
