import { randomUUID } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';
import type { AppEnv } from '../env';

/**
 * The path as logged: a segment that is an email (participants are addressed by email too) becomes
 * `:email`, and a long path is cut, so a log line never carries an address or an attacker's megabyte.
 */
export function loggablePath(path: string): string {
  const safe = path
    .split('/')
    .map((segment) => (/@|%40/i.test(segment) ? ':email' : segment))
    .join('/');
  return safe.length > 200 ? `${safe.slice(0, 200)}…` : safe;
}

/** One structured log line per request: method, path (no emails), status, duration, request id, account. */
export const requestLog: MiddlewareHandler<AppEnv> = async (c, next) => {
  const started = performance.now();
  const incoming = c.req.header('x-request-id');
  const requestId = incoming && /^[\w.-]{1,128}$/.test(incoming) ? incoming : randomUUID();
  c.set('requestId', requestId);
  c.header('X-Request-Id', requestId);
  await next();
  const status = c.res.status;
  const line = {
    method: c.req.method,
    path: loggablePath(c.req.path),
    status,
    durationMs: Math.round((performance.now() - started) * 10) / 10,
    requestId,
    accountId: c.get('accountId'),
  };
  const logger = c.get('deps').logger;
  if (status >= 500) logger.error(line, 'request');
  else logger.info(line, 'request');
};
