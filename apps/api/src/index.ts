import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { type ServerType, serve } from '@hono/node-server';
import { createApp } from './app';
import type { Deps } from './env';
import { buildErrorBody } from './errors';
import { defaultSupportUrl } from './lib/docs-paths';

export { createApp } from './app';
export { openApiDocument } from './docs/index';
export { servedOpenApiDocument } from './docs/served';
export type { App, AppEnv, Deps } from './env';
export { buildErrorBody } from './errors';
export { appliedSignal } from './lib/applied-signal';
export { defaultSupportUrl, OPENAPI_PATH } from './lib/docs-paths';
export { HTTP_ERRORS } from './lib/error-status';
export { sharedLookupCache } from './lib/lookup-cache';
export { createReadiness } from './lib/readiness';
export {
  createRateLimiter,
  limiterConnection,
  type RateLimiter,
  type RateLimiterOptions,
} from './limits/limiter';

export type RunningApi = { server: ServerType; port: number; close(): Promise<void> };

export type ServeOptions = {
  port: number;
  /** The address to listen on (`HOST`). @defaultValue `127.0.0.1`: this machine only */
  host?: string;
  /**
   * Longest a client may take to send its headers, in ms (slow clients hold sockets).
   * @defaultValue 10000
   */
  headersTimeoutMs?: number;
  /**
   * Longest a client may take to send a whole request, body included, in ms.
   * @defaultValue 30000
   */
  requestTimeoutMs?: number;
};

/** What Node's HTTP parser refused, in the client's words. */
function clientErrorMessage(code: string | undefined): string {
  if (code === 'HPE_HEADER_OVERFLOW') return 'Request headers are larger than 16 KiB';
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return 'The request was not received in full in time';
  return 'Malformed HTTP request';
}

/**
 * Requests Node refuses before the app sees them (headers over 16 KiB, a malformed request line, a client
 * too slow to send) still get the documented error body, as a 400 VALIDATION_ERROR.
 */
function answerClientErrors(server: Server, supportUrl: string) {
  server.on('clientError', (err: Error & { code?: string }, socket: Duplex) => {
    if (!socket.writable || (socket as Duplex & { _httpMessage?: unknown })._httpMessage) {
      socket.destroy();
      return;
    }
    const message = clientErrorMessage(err.code);
    const body = JSON.stringify(
      buildErrorBody(
        'VALIDATION_ERROR',
        message,
        { supportUrl, requestId: randomUUID() },
        { errors: [{ location: 'headers', param: '', value: null, msg: message }] },
      ),
    );
    socket.end(
      `HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
}

/**
 * Serves the app over HTTP. `close()` stops accepting and lets requests in flight finish. Rejects when the
 * port cannot be had.
 */
export async function startApi(deps: Deps, opts: ServeOptions): Promise<RunningApi> {
  const app = createApp(deps);
  return new Promise((resolve, reject) => {
    const server = serve(
      {
        fetch: app.fetch,
        port: opts.port,
        hostname: opts.host ?? '127.0.0.1',
        serverOptions: {
          headersTimeout: opts.headersTimeoutMs ?? 10_000,
          requestTimeout: opts.requestTimeoutMs ?? 30_000,
        },
      },
      (info) => {
        server.off('error', reject);
        answerClientErrors(
          server as Server,
          deps.supportUrl ?? defaultSupportUrl(`http://localhost:${info.port}`),
        );
        resolve({
          server,
          port: info.port,
          close: () =>
            new Promise<void>((done) => {
              server.close(() => {
                void app.drainHandOffs().finally(done);
              });
              // Idle keep-alive sockets would hold close() open.
              (server as unknown as { closeIdleConnections?: () => void }).closeIdleConnections?.();
            }),
        });
      },
    );
    // A port already taken (EADDRINUSE) or not allowed (EACCES) rejects, for the caller to explain.
    server.once('error', reject);
  });
}
