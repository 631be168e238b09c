import { createServer, type Server } from 'node:http';
import type { Logger } from '@stampcard/config';
import type { Registry } from 'prom-client';
import { METRICS_REFUSALS, metricsAccess } from './auth';

export type Refusal = (typeof METRICS_REFUSALS)[keyof typeof METRICS_REFUSALS];

export type MetricsListenerOptions = {
  port: number;
  host: string;
  registry: Registry;
  /** `METRICS_TOKEN`; unset, `/metrics` is refused to everyone. */
  token: string | undefined;
  /** Whether the process can work now (its stores answer), for `/readyz`; bounded and cached by the caller. */
  ready: () => Promise<{ ready: boolean; checks: Record<string, 'ok' | 'down'> }>;
  /** The error body of a refusal, in the service's error shape, and its status. */
  refuse: (refusal: Refusal) => { status: number; body: unknown };
  logger: Logger;
};

/**
 * The small HTTP listener of a process that serves no API (worker, dispatcher): `GET /metrics` (Prometheus text
 * format, with `Authorization: Bearer <METRICS_TOKEN>`), `GET /livez` (200 while the process runs) and
 * `GET /readyz` (200 while its stores answer, else 503). Anything else is a 404. Requests have 10 s to arrive
 * whole, and their bodies are not read.
 */
export async function startMetricsListener(opts: MetricsListenerOptions): Promise<Server & { port: number }> {
  const server = createServer(async (req, res) => {
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
      res.end(JSON.stringify(body));
    };
    try {
      const path = (req.url ?? '/').split('?')[0];
      if (req.method !== 'GET' && req.method !== 'HEAD') return json(405, { error: 'GET only' });
      if (path === '/livez') return json(200, { status: 'ok' });
      if (path === '/readyz') {
        const { ready, checks } = await opts.ready();
        return json(ready ? 200 : 503, { status: ready ? 'ready' : 'unavailable', checks });
      }
      if (path !== '/metrics') return json(404, { error: 'not found' });
      const access = metricsAccess(req.headers.authorization, opts.token);
      if (access !== 'allowed') {
        const { status, body } = opts.refuse(METRICS_REFUSALS[access]);
        return json(status, body);
      }
      const text = await opts.registry.metrics();
      res.writeHead(200, { 'content-type': opts.registry.contentType, 'cache-control': 'no-store' });
      res.end(text);
    } catch (err) {
      opts.logger.error({ err }, 'metrics listener failed to answer');
      if (!res.headersSent) json(500, { error: 'internal error' });
      else res.destroy();
    }
  });
  server.requestTimeout = 10_000;
  server.headersTimeout = 10_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  return Object.assign(server, { port: typeof address === 'object' && address ? address.port : opts.port });
}
