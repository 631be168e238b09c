import { createRoute, type RouteConfig } from '@hono/zod-openapi';
import type { MiddlewareHandler } from 'hono';
import type { ZodType } from 'zod';
import type { AppEnv } from '../env';

const WRAPPERS = new Set(['optional', 'nullable', 'default', 'prefault', 'readonly', 'catch']);

type AnyDef = { type: string; innerType?: ZodType; shape?: Record<string, ZodType> };
const defOf = (s: ZodType) => (s as unknown as { def: AnyDef }).def;

function unwrap(s: ZodType): ZodType {
  let cur = s;
  while (WRAPPERS.has(defOf(cur).type) && defOf(cur).innerType) cur = defOf(cur).innerType!;
  return cur;
}

/** Nested keys as forms write them: `metadata[points]=5` → `{ metadata: { points: "5" } }`, `a[]=1&a[]=2` → arrays. */
export function parseFormBody(text: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [rawKey, value] of new URLSearchParams(text)) {
    const keys = rawKey.match(/^[^[\]]+|\[[^[\]]*\]/g)?.map((k) => k.replace(/^\[|\]$/g, '')) ?? [rawKey];
    let node: Record<string, unknown> = out;
    keys.forEach((key, i) => {
      const last = i === keys.length - 1;
      const nextIsArray = keys[i + 1] === '';
      if (key === '') return;
      if (last) {
        node[key] = value;
      } else if (nextIsArray) {
        const arr = Array.isArray(node[key]) ? (node[key] as unknown[]) : [];
        arr.push(value);
        node[key] = arr;
      } else {
        if (typeof node[key] !== 'object' || node[key] === null || Array.isArray(node[key])) node[key] = {};
        node = node[key] as Record<string, unknown>;
      }
    });
  }
  return out;
}

/** Form values are strings: turn them into the booleans and numbers the schema's fields expect. */
export function coerceFormValues(schema: ZodType, value: unknown): unknown {
  const s = unwrap(schema);
  const def = defOf(s);
  if (def.type === 'boolean' && (value === 'true' || value === 'false')) return value === 'true';
  if (
    def.type === 'number' &&
    typeof value === 'string' &&
    value.trim() !== '' &&
    !Number.isNaN(Number(value))
  ) {
    return Number(value);
  }
  if (def.type === 'object' && def.shape && value && typeof value === 'object' && !Array.isArray(value)) {
    const obj = value as Record<string, unknown>;
    return Object.fromEntries(
      Object.entries(obj).map(([k, v]) => [k, def.shape![k] ? coerceFormValues(def.shape![k], v) : v]),
    );
  }
  return value;
}

/**
 * POST bodies may be JSON or form-encoded ("standard parameters are also accepted"). A form body is turned
 * into the JSON the route validates, its values coerced to the schema's types; an empty body with no
 * content type counts as `{}`. Runs before the route's validators.
 */
export function acceptFormOrJson(schema: ZodType): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const type = c.req.header('content-type') ?? '';
    if (/^application\/x-www-form-urlencoded/i.test(type)) {
      const json = JSON.stringify(coerceFormValues(schema, parseFormBody(await c.req.raw.clone().text())));
      c.req.raw = new Request(c.req.raw.url, {
        method: c.req.method,
        headers: jsonHeaders(c.req.raw.headers),
        body: json,
      });
    } else if (!type) {
      const text = await c.req.raw.clone().text();
      c.req.raw = new Request(c.req.raw.url, {
        method: c.req.method,
        headers: jsonHeaders(c.req.raw.headers),
        body: text.trim() === '' ? '{}' : text,
      });
    }
    await next();
  };
}

function jsonHeaders(h: Headers): Headers {
  const headers = new Headers(h);
  headers.set('content-type', 'application/json');
  headers.delete('content-length');
  return headers;
}

type JsonBodyRoute = Omit<RouteConfig, 'middleware'> & {
  request: { body: { content: { 'application/json': { schema: ZodType } } } };
};

/**
 * `createRoute` for an endpoint with a body: the JSON body schema it declares also validates the same body
 * sent form-encoded. Every route with a body is defined with it, so none can leave forms out.
 */
export function createBodyRoute<const R extends JsonBodyRoute>(config: R) {
  const schema = config.request.body.content['application/json'].schema;
  return createRoute({ ...config, middleware: [acceptFormOrJson(schema)] });
}
