import {
  DomainError,
  type DuplicateRequestDetails,
  type ErrorCode,
  errorChain,
  type ValidationIssue,
  validationError,
} from '@stampcard/core';
import type { Context } from 'hono';
import { HTTPException } from 'hono/http-exception';
import type { ZodError } from 'zod';
import type { AppEnv } from './env';
import { unsupportedContentType } from './lib/body';
import { defaultSupportUrl } from './lib/docs-paths';
import { HTTP_ERRORS } from './lib/error-status';

type Details = Record<string, unknown>;

/**
 * The one error body: `{ name, code, message, status, supportUrl, level, timestamp, requestId }` plus the
 * fields of its kind at the top level. Those fields never replace the common ones (`status` always matches
 * the HTTP status). `timestamp` is ISO 8601, as the seed's 429 body has it.
 */
export function buildErrorBody(
  code: ErrorCode,
  message: string,
  where: { supportUrl: string; requestId?: string },
  details: Details = {},
) {
  const { name, status } = HTTP_ERRORS[code];
  const body: Details & { status: typeof status } = {
    name,
    code,
    message,
    status,
    supportUrl: where.supportUrl,
    level: 'error' as const,
    timestamp: new Date().toISOString(),
    requestId: where.requestId,
  };
  for (const [key, value] of Object.entries(details)) if (!Object.hasOwn(body, key)) body[key] = value;
  return body;
}

/** The error body for a request being answered by the app. */
export function errorBody(c: Context<AppEnv>, code: ErrorCode, message: string, details: Details = {}) {
  const supportUrl = c.get('deps')?.supportUrl ?? defaultSupportUrl(new URL(c.req.url).origin);
  return buildErrorBody(code, message, { supportUrl, requestId: c.get('requestId') }, details);
}

export function errorResponse(
  c: Context<AppEnv>,
  code: ErrorCode,
  message: string,
  details?: Details,
  headers?: Headers | Record<string, string>,
) {
  const body = errorBody(c, code, message, details);
  const h = headers instanceof Headers ? Object.fromEntries(headers) : headers;
  return c.json(body, body.status, h);
}

/** Driver and socket codes that mean "the store did not answer", not "the request was wrong". */
const UNAVAILABLE_CODES = new Set([
  // sockets
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
  'EAI_AGAIN',
  // postgres.js
  'CONNECT_TIMEOUT',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  // PostgreSQL SQLSTATEs: shutdown, cannot connect now, statement timeout (57014), lock timeout (55P03),
  // idle-in-transaction timeout (25P03); classes 08 (connection) and 53 (insufficient resources) below.
  '57P01',
  '57P02',
  '57P03',
  '57014',
  '55P03',
  '25P03',
]);

/** True when the error, or one of its causes, says a backing store is down or too slow. */
export function isUnavailable(err: unknown): boolean {
  for (const e of errorChain(err)) {
    if (e instanceof DomainError) return e.code === 'UNAVAILABLE';
    for (const code of [e.code, e.errno]) {
      if (typeof code !== 'string') continue;
      if (UNAVAILABLE_CODES.has(code)) return true;
      if (/^(08|53)[0-9A-Z]{3}$/.test(code)) return true;
    }
    // ioredis gives this class, and no code, when a command ran out of reconnection attempts.
    if (e.name === 'MaxRetriesPerRequestError') return true;
  }
  return false;
}

/** Framework exceptions keep their meaning: a 429 stays a 429, and every answer has the one body. */
const HTTP_STATUS_CODES: Partial<Record<number, ErrorCode>> = {
  401: 'AUTHENTICATION_REQUIRED',
  403: 'NOT_AUTHORIZED',
  404: 'NOT_FOUND',
  405: 'METHOD_NOT_ALLOWED',
  429: 'RATE_LIMIT',
  503: 'UNAVAILABLE',
};

function fromHttpException(err: HTTPException, c: Context<AppEnv>) {
  // Headers the thrower set (Retry-After, WWW-Authenticate) are kept; the body is ours.
  const headers = new Headers(err.res?.headers);
  headers.delete('content-type');
  headers.delete('content-length');
  const code = HTTP_STATUS_CODES[err.status] ?? (err.status < 500 ? 'VALIDATION_ERROR' : 'INTERNAL_ERROR');
  if (code === 'INTERNAL_ERROR') return internalError(err, c);
  if (code !== 'VALIDATION_ERROR')
    return errorResponse(c, code, err.message || HTTP_ERRORS[code].name, {}, headers);
  const refused =
    err.status === 415
      ? unsupportedContentType(c.req.header('content-type'))
      : validationError([{ location: 'body', param: '', value: null, msg: err.message || 'Bad request' }]);
  return errorResponse(c, code, refused.message, refused.details, headers);
}

function internalError(err: unknown, c: Context<AppEnv>) {
  if (!c.get('abandoned'))
    c.get('deps')?.logger.error({ err, requestId: c.get('requestId') }, 'unhandled error');
  return errorResponse(c, 'INTERNAL_ERROR', 'Internal error: the request id identifies it in the logs');
}

/**
 * A `DUPLICATE_REQUEST` as the API describes it: `request` may say how the API recorded the first request (the
 * Idempotency-Key store keeps its path with emails masked); otherwise it was identical to this one.
 */
type DuplicateRequest = DuplicateRequestDetails & { request?: { method: string; path: string } };

/**
 * The fields a domain error adds to its body. Core states details in its own terms; those that speak of the
 * HTTP request are made here: a `DUPLICATE_REQUEST`'s `request: { method, path, startedAt }` (the contract's).
 */
function bodyDetails(err: DomainError, c: Context<AppEnv>): Details {
  if (err.code !== 'DUPLICATE_REQUEST') return err.details;
  const { startedAt, request } = err.details as DuplicateRequest;
  return {
    request: { method: request?.method ?? c.req.method, path: request?.path ?? c.req.path, startedAt },
  };
}

/**
 * The app's onError, the one path every failure takes: domain errors keep their code (5xx ones are logged
 * first), framework exceptions keep their status, store outages are a 503, anything else a logged 500.
 * Logs carry the error's class, code and constraint (see the logger's serializer), never its values.
 */
export function handleError(err: Error, c: Context<AppEnv>) {
  // Work whose request was answered already (the deadline passed) is logged once by the deadline when it ends.
  const logger = c.get('abandoned') ? undefined : c.get('deps')?.logger;
  if (err instanceof DomainError) {
    if (HTTP_ERRORS[err.code].status >= 500) {
      logger?.error(
        { err, requestId: c.get('requestId') },
        err.code === 'UNAVAILABLE' ? 'backing store unavailable' : 'domain fault',
      );
    }
    return errorResponse(c, err.code, err.message, bodyDetails(err, c));
  }
  if (err instanceof HTTPException) return fromHttpException(err, c);
  if (isUnavailable(err)) {
    logger?.error({ err, requestId: c.get('requestId') }, 'backing store unavailable');
    return errorResponse(
      c,
      'UNAVAILABLE',
      'A backing store is unavailable: nothing was accepted, retry later',
    );
  }
  return internalError(err, c);
}

function valueAt(source: unknown, path: PropertyKey[]): unknown {
  let v: unknown = source;
  for (const k of path) {
    if (v === null || typeof v !== 'object' || !Object.hasOwn(v, k)) return undefined;
    v = (v as Record<PropertyKey, unknown>)[k];
  }
  return v;
}

const LOCATIONS: Record<string, string> = {
  json: 'body',
  form: 'body',
  query: 'query',
  param: 'params',
  header: 'headers',
};

/** Zod issues as the contract's `errors: [{ location, param, value, msg }]`. */
export function zodIssues(error: ZodError, target: string, source: unknown): ValidationIssue[] {
  const location = (Object.hasOwn(LOCATIONS, target) ? LOCATIONS[target] : undefined) ?? target;
  return error.issues.flatMap((issue) => {
    const path = issue.path.map(String);
    if (issue.code === 'unrecognized_keys') {
      return issue.keys.map((key) => ({
        location,
        param: [...path, key].join('.'),
        value: valueAt(source, [...issue.path, key]),
        msg: 'unknown field',
      }));
    }
    const value = valueAt(source, issue.path);
    const missing = value === undefined && issue.code === 'invalid_type';
    return [
      { location, param: path.join('.'), value: value ?? null, msg: missing ? 'is required' : issue.message },
    ];
  });
}

/** The validator hook of every route: a failed parse becomes the ValidationError body. */
export async function validationHook(
  result: { success: boolean; error?: ZodError; target: string },
  c: Context<AppEnv>,
) {
  if (result.success || !result.error) return;
  let source: unknown;
  if (result.target === 'json') source = await c.req.json().catch(() => undefined);
  else if (result.target === 'query') source = c.req.query();
  else if (result.target === 'param') source = c.req.param();
  throw validationError(zodIssues(result.error, result.target, source));
}
