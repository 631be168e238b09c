import { type ServerType, serve } from '@hono/node-server';
import { createApp } from './app';
import type { Deps } from './env';

export { createApp } from './app';
export type { AppEnv, Deps } from './env';

export type RunningApi = { server: ServerType; port: number; close(): Promise<void> };

/** Serves the app over HTTP. `close()` stops accepting and lets requests in flight finish. */
export async function startApi(deps: Deps, opts: { port: number; host?: string }): Promise<RunningApi> {
  const app = createApp(deps);
  return new Promise((resolve) => {
    const server = serve({ fetch: app.fetch, port: opts.port, hostname: opts.host ?? '0.0.0.0' }, (info) => {
      resolve({
        server,
        port: info.port,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            // Idle keep-alive sockets would hold close() open.
            (server as unknown as { closeIdleConnections?: () => void }).closeIdleConnections?.();
          }),
      });
    });
  });
}
