import { createRoute, type RouteConfig } from '@hono/zod-openapi';
import { assertLive } from '@stampcard/core';
import type { MiddlewareHandler } from 'hono';
import type { ZodType } from 'zod';
import type { AppEnv } from '../env';
import { parseFormBody, parseJsonBody } from './parse-body';

const WRAPPERS = new Set(['optional', 'nullable', 'default', 'prefault', 'readonly', 'catch']);

type AnyDef = { type: string; innerType?: ZodType; shape?: Record<string, ZodType> };
const defOf = (s: ZodType) => (s as unknown as { def: AnyDef }).def;

function unwrap(s: ZodType): ZodType {
  let cur = s;
  while (WRAPPERS.has(defOf(cur).type) && defOf(cur).innerType) cur = defOf(cur).innerType!;
  return cur;
}

/** Form values are strings: turn them into the booleans and numbers the schema's fields expect. */
export function coerceFormValues(schema: ZodType, value: unknown): unknown {
  const def = defOf(unwrap(schema));
  if (def.type === 'boolean' && (value === 'true' || value === 'false')) return value === 'true';
  if (
    def.type === 'number' &&
    typeof value === 'string' &&
    value.trim() !== '' &&
    !Number.isNaN(Number(value))
  ) {
    return Number(value);
  }
  const shape = def.shape;
  if (def.type === 'object' && shape && value && typeof value === 'object' && !Array.isArray(value)) {
    const out: Record<string, unknown> = Object.create(null);
    for (const [k, v] of Object.entries(value)) {
      // Only the schema's own fields are coerced: a key such as `toString` must not reach a prototype.
      out[k] = Object.hasOwn(shape, k) ? coerceFormValues(shape[k]!, v) : v;
    }
    return out;
  }
  return value;
}

const mediaType = (header: string | undefined) => (header ?? '').split(';')[0]!.trim().toLowerCase();

/**
 * Every body is checked while it is parsed, before its route's schema sees it (see `parseJsonBody`):
 * depth, prototype keys, strings PostgreSQL refuses. POST bodies may also be form-encoded ("standard
 * parameters are also accepted"): a form body becomes the JSON the route validates, its values coerced to
 * the schema's types. An empty body with no content type counts as `{}`.
 */
export function guardBody(schema: ZodType): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    // Work its deadline already answered stops here: the request's body cannot be read any more.
    assertLive(c.get('ctx'));
    const type = mediaType(c.req.header('content-type'));
    if (type === 'application/x-www-form-urlencoded') {
      const form = parseFormBody(await c.req.text());
      replaceBody(c.req, JSON.stringify(coerceFormValues(schema, form)));
    } else if (type === '') {
      const text = await c.req.text();
      const json = text.trim() === '' ? '{}' : text;
      parseJsonBody(json);
      replaceBody(c.req, json);
    } else if (/^application\/([\w.-]+\+)?json$/.test(type)) {
      // The text stays cached on the request, so the route's validator parses what was checked here.
      parseJsonBody(await c.req.text());
    }
    await next();
  };
}

// Hono caches a body read as a promise under its kind (`text`), whatever its declared type says.
type HonoRequestLike = { raw: Request; bodyCache: object };

/** The request, from here on, carries `json` as an application/json body. */
function replaceBody(req: HonoRequestLike, json: string) {
  const headers = new Headers(req.raw.headers);
  headers.set('content-type', 'application/json');
  headers.delete('content-length');
  req.raw = new Request(req.raw.url, { method: req.raw.method, headers, body: json });
  req.bodyCache = { text: Promise.resolve(json) };
}

type JsonBodyRoute = Omit<RouteConfig, 'middleware'> & {
  request: { body: { content: { 'application/json': { schema: ZodType } } } };
};

/**
 * `createRoute` for an endpoint with a body: the body is guarded (`guardBody`), and the JSON body schema it
 * declares also validates the same body sent form-encoded. Every route with a body is defined with it.
 * (`P` keeps the path's literal type as `createRoute` does. A `const` type parameter would type the `200` of
 * a spread `okResponse(...)` as the string `'200'`, which hono's typed responses do not match: the handler's
 * answer would go unchecked against its schema.)
 */
export function createBodyRoute<P extends string, R extends Omit<JsonBodyRoute, 'path'> & { path: P }>(
  config: R,
) {
  const schema = config.request.body.content['application/json'].schema;
  return createRoute({ ...config, middleware: [guardBody(schema)] });
}
