import { METRICS_REFUSALS, metricsAccess } from '@stampcard/telemetry';
import type { App } from '../../env';
import { errorResponse } from '../../errors';

/** `/metrics`'s path: the one Prometheus scrapes by default. */
export const METRICS_PATH = '/metrics';

/**
 * The process's metrics in the Prometheus text format, for `Authorization: Bearer <METRICS_TOKEN>`: 401
 * `AUTHENTICATION_REQUIRED` without it or with another, 403 `NOT_AUTHORIZED` when the service has no
 * `METRICS_TOKEN`. Not in the OpenAPI document: it is for a Prometheus server, not for API clients (see
 * docs/operating.md, "Metrics").
 */
export function registerGetMetrics(app: App) {
  app.get(METRICS_PATH, async (c) => {
    const { metrics, metricsToken } = c.get('deps');
    const access = metricsAccess(c.req.header('authorization'), metrics ? metricsToken : undefined);
    if (access !== 'allowed') {
      const { code, message } = METRICS_REFUSALS[access];
      return errorResponse(c, code, message);
    }
    const text = await metrics!.registry.metrics();
    return c.body(text, 200, { 'Content-Type': metrics!.registry.contentType, 'Cache-Control': 'no-store' });
  });
}
