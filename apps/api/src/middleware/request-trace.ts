import { contextOf, inSpan, SpanKind } from '@stampcard/telemetry';
import type { MiddlewareHandler } from 'hono';
import type { AppEnv } from '../env';
import { answeringRoute } from './request-metrics';

/**
 * With tracing on (`OTEL_EXPORTER_OTLP_ENDPOINT`), one server span per request, named by its route's template
 * once it is known, continuing the caller's trace when it sends a `traceparent`. What the request commits is
 * handed on with this span's `traceparent` (app.ts), so the worker's and the dispatcher's spans join its trace.
 */
export const requestTrace: MiddlewareHandler<AppEnv> = (c, next) =>
  inSpan(
    c.req.method,
    {
      kind: SpanKind.SERVER,
      parent: contextOf(c.req.header('traceparent')),
      attributes: { 'http.request.method': c.req.method },
    },
    async (span) => {
      await next();
      const route = answeringRoute(c);
      span.updateName(`${c.req.method} ${route}`);
      span.setAttributes({ 'http.route': route, 'http.response.status_code': c.res.status });
    },
  );
