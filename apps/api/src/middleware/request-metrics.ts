import type { Context, MiddlewareHandler } from 'hono';
import { matchedRoutes } from 'hono/route';
import type { AppEnv } from '../env';

/**
 * The template of the route that answered (`/v1/campaign/:campaignId/participant`), never the path a caller
 * sent: the last route matched that is not middleware, or `unmatched` (a 404, a 405, a refusal before any
 * route). The label's values are as many as the app's routes, whatever the traffic.
 */
export function answeringRoute(c: Context): string {
  const routes = matchedRoutes(c);
  for (let i = routes.length - 1; i >= 0; i--) {
    const r = routes[i]!;
    if (r.method !== 'ALL') return r.path;
  }
  return 'unmatched';
}

/**
 * Counts every answer into the process's metrics: its duration by method, route and status, and a 429's limit
 * (set by whatever refused it, `c.var.refusedBy`). Without metrics it only calls on.
 */
export const requestMetrics: MiddlewareHandler<AppEnv> = async (c, next) => {
  const metrics = c.get('deps').metrics;
  if (!metrics) return next();
  const started = performance.now();
  await next();
  const status = c.res.status;
  metrics.http.observe(c.req.method, answeringRoute(c), status, (performance.now() - started) / 1000);
  if (status === 429) metrics.accept.refused(c.get('refusedBy') ?? 'unknown');
};
