import type { Context, MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { AppEnv } from '../env';

const DIGITS = /^\d{1,15}$/;

/**
 * Refuses a body over `maxBytes` before it is read. A request that states its length (no
 * `Transfer-Encoding`) is judged by its `Content-Length` alone: Node's HTTP parser delivers exactly that many
 * bytes, and the body is later read straight from the socket. Only a chunked body, whose length is unknown
 * until it ends, goes through hono's `bodyLimit`, which counts it as it streams. GET, HEAD, OPTIONS and DELETE
 * requests without a stated body skip the check: nothing reads their body.
 *
 * (hono's `bodyLimit` alone would ask every request for its Web `ReadableStream`, which makes the Node
 * server build a full `Request` and stream adapter for each: a sixth of the API's busy CPU at full ingest, in
 * a `BENCH_CPU_PROF=api npm run bench -- --quick` profile.)
 */
export function limitBody(
  maxBytes: number,
  onError: (c: Context<AppEnv>) => Response | Promise<Response>,
): MiddlewareHandler<AppEnv> {
  const streamed = bodyLimit({ maxSize: maxBytes, onError });
  return async (c, next) => {
    const length = c.req.header('content-length');
    const chunked = c.req.header('transfer-encoding') !== undefined;
    if (!chunked) {
      if (length === undefined) {
        if (c.req.method === 'POST' || c.req.method === 'PUT' || c.req.method === 'PATCH')
          return streamed(c, next);
        return next();
      }
      if (DIGITS.test(length)) return Number(length) > maxBytes ? onError(c) : next();
    }
    return streamed(c, next);
  };
}

/**
 * For a route that counts its body itself as it streams it (an import's file, see `storeUpload`): a stated
 * `Content-Length` past `maxBytes` is refused before anything is read; a chunked body goes on unread (hono's
 * `bodyLimit` would read it whole into memory to count it, 50 MiB for an import).
 */
export function limitStatedBody(
  maxBytes: number,
  onError: (c: Context<AppEnv>) => Response | Promise<Response>,
): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const length = c.req.header('content-length');
    if (c.req.header('transfer-encoding') === undefined && length !== undefined) {
      if (!DIGITS.test(length) || Number(length) > maxBytes) return onError(c);
    }
    return next();
  };
}
