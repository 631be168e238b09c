import {
  type Attributes,
  type Context,
  context,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, NodeTracerProvider } from '@opentelemetry/sdk-trace-node';

export type TracingOptions = {
  /** `service.name` of the spans: `stampcard-api`, `stampcard-worker`, `stampcard-dispatcher`. */
  serviceName: string;
  /** `OTEL_EXPORTER_OTLP_ENDPOINT`: the collector's base URL; spans go to `<it>/v1/traces` (OTLP over HTTP). */
  endpoint: string;
};

/** The running tracer provider, and how to flush and stop it. */
export type Tracing = { shutdown(): Promise<void> };

/**
 * Starts tracing for this process: a tracer provider that batches spans to the OTLP endpoint, registered as the
 * global one (with AsyncLocalStorage for the current span and W3C Trace Context for propagation). Off unless the
 * endpoint is set: without it every span below is OpenTelemetry's no-op, at the cost of a function call.
 */
export function startTracing(opts: TracingOptions): Tracing {
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': opts.serviceName }),
    spanProcessors: [
      new BatchSpanProcessor(
        new OTLPTraceExporter({ url: `${opts.endpoint.replace(/\/$/, '')}/v1/traces` }),
        {
          scheduledDelayMillis: 1000,
        },
      ),
    ],
  });
  provider.register();
  return {
    shutdown: async () => {
      await provider.shutdown();
      trace.disable();
      context.disable();
      propagation.disable();
    },
  };
}

const tracer = () => trace.getTracer('stampcard');

/** A W3C `traceparent` is at most this long; anything longer from a job's data is ignored. */
const TRACEPARENT_MAX = 64;

/** The `traceparent` of the current span (to carry in a job's data), or null when none is being traced. */
export function currentTraceparent(): string | null {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent ?? null;
}

/** The context a `traceparent` names (from a job's data, a request's header); the empty one for anything else. */
export function contextOf(traceparent: string | null | undefined): Context {
  if (typeof traceparent !== 'string' || traceparent.length > TRACEPARENT_MAX) return ROOT_CONTEXT;
  return propagation.extract(ROOT_CONTEXT, { traceparent });
}

/**
 * Runs `work` in a span named `name`, child of `parent` (a context; the current one by default): its status is
 * an error when `work` throws, and it ends when `work` settles. `work` gets the span, to add attributes.
 */
export async function inSpan<T>(
  name: string,
  opts: { kind?: SpanKind; parent?: Context; attributes?: Attributes },
  work: (span: Span) => Promise<T>,
): Promise<T> {
  return tracer().startActiveSpan(
    name,
    { kind: opts.kind ?? SpanKind.INTERNAL, attributes: opts.attributes },
    opts.parent ?? context.active(),
    async (span) => {
      try {
        return await work(span);
      } catch (err) {
        span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error)?.name ?? 'Error' });
        throw err;
      } finally {
        span.end();
      }
    },
  );
}

/**
 * A span that is not made current: one of several that one piece of work carries at once (a fan-out of many
 * events, each of its own trace), child of `traceparent`. Answers its own `traceparent`, for the jobs it makes,
 * and how to end it.
 */
export function startChildSpan(
  name: string,
  traceparent: string | null | undefined,
  attributes?: Attributes,
): { traceparent: string | null; end(failed?: boolean): void } {
  const parent = contextOf(traceparent);
  const span = tracer().startSpan(name, { attributes }, parent);
  const carrier: Record<string, string> = {};
  propagation.inject(trace.setSpan(parent, span), carrier);
  return {
    traceparent: carrier.traceparent ?? null,
    end: (failed = false) => {
      if (failed) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    },
  };
}

export { SpanKind };
