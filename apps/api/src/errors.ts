import {
  DomainError,
  ERROR_CATALOG,
  type ErrorCode,
  type ValidationIssue,
  validationError,
} from '@stampcard/core';
import type { Context } from 'hono';
import { HTTPException } from 'hono/http-exception';
import type { ZodError } from 'zod';
import type { AppEnv } from './env';

/**
 * The one error body: `{ name, code, message, status, supportUrl, level, timestamp }` plus the fields of its
 * kind at the top level. `timestamp` is ISO 8601, as the seed's 429 body has it.
 */
export function errorBody(
  c: Context<AppEnv>,
  code: ErrorCode,
  message: string,
  details: Record<string, unknown> = {},
) {
  const { name, status } = ERROR_CATALOG[code];
  const supportUrl = c.get('deps')?.supportUrl ?? `${new URL(c.req.url).origin}/docs#errors`;
  return {
    name,
    code,
    message,
    status,
    supportUrl,
    level: 'error' as const,
    timestamp: new Date().toISOString(),
    requestId: c.get('requestId'),
    ...details,
  };
}

export function errorResponse(
  c: Context<AppEnv>,
  code: ErrorCode,
  message: string,
  details?: Record<string, unknown>,
) {
  const body = errorBody(c, code, message, details);
  return c.json(body, body.status);
}

function isUnavailable(err: unknown): boolean {
  const e = err as { code?: string; errno?: string; name?: string; message?: string; cause?: unknown };
  const code = e?.code ?? e?.errno;
  if (
    code &&
    [
      'ECONNREFUSED',
      'ECONNRESET',
      'ETIMEDOUT',
      'CONNECT_TIMEOUT',
      'CONNECTION_CLOSED',
      'CONNECTION_ENDED',
      'CONNECTION_DESTROYED',
      '57P01',
      '57P03',
      '53300',
    ].includes(code)
  ) {
    return true;
  }
  if (
    e?.name === 'MaxRetriesPerRequestError' ||
    /Connection is closed|Stream isn't writeable/.test(e?.message ?? '')
  )
    return true;
  return e?.cause !== undefined && e.cause !== err ? isUnavailable(e.cause) : false;
}

/** The app's onError: domain errors keep their code, framework errors become 400s, the rest a logged 500. */
export function handleError(err: Error, c: Context<AppEnv>) {
  if (err instanceof DomainError) return errorResponse(c, err.code, err.message, err.details);
  if (err instanceof HTTPException && err.status < 500) {
    const msg =
      err.status === 415
        ? 'Unsupported Content-Type: send application/json or application/x-www-form-urlencoded'
        : err.message || 'Bad request';
    return errorResponse(c, 'VALIDATION_ERROR', msg, {
      errors: [{ location: 'body', param: '', value: null, msg }],
    });
  }
  const logger = c.get('deps')?.logger;
  if (isUnavailable(err)) {
    logger?.error({ err, requestId: c.get('requestId') }, 'backing store unavailable');
    return errorResponse(
      c,
      'UNAVAILABLE',
      'A backing store is unavailable: nothing was accepted, retry later',
    );
  }
  logger?.error({ err, requestId: c.get('requestId') }, 'unhandled error');
  return errorResponse(c, 'INTERNAL_ERROR', 'Internal error: the request id identifies it in the logs');
}

function valueAt(source: unknown, path: PropertyKey[]): unknown {
  let v: unknown = source;
  for (const k of path) {
    if (v === null || typeof v !== 'object') return undefined;
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
  const location = LOCATIONS[target] ?? target;
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
