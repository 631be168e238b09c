import { createRoute, type RouteConfig } from '@hono/zod-openapi';
import { assertLive, validationError } from '@stampcard/core';
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

export const mediaType = (header: string | undefined) => (header ?? '').split(';')[0]!.trim().toLowerCase();

export const JSON_TYPE = /^application\/([\w.-]+\+)?json$/;
const FORM_TYPE = 'application/x-www-form-urlencoded';
const SEND = `send JSON with Content-Type: application/json, or form fields with Content-Type: ${FORM_TYPE}`;

/**
 * The 400 for a body the API cannot read as its `Content-Type` (the header, `value`) says: the message names
 * the content types a body may have. `why` is the header's problem; `message` the whole sentence.
 */
export function contentTypeError(header: string | undefined, why: string, message: string) {
  return validationError(
    [{ location: 'headers', param: 'content-type', value: header ?? null, msg: why }],
    message,
  );
}

/** A body sent with a content type no route takes (`text/plain`, `multipart/form-data`, …). */
export const unsupportedContentType = (header: string | undefined) =>
  contentTypeError(
    header,
    `is not supported: ${SEND}`,
    `Unsupported Content-Type ${mediaType(header) || '(none)'}: ${SEND}`,
  );

/**
 * Every body is checked while it is parsed, before its route's schema sees it (see `parseJsonBody`):
 * depth, prototype keys, strings PostgreSQL refuses. POST bodies may also be form-encoded ("standard
 * parameters are also accepted"): a form body becomes the JSON the route validates, its values coerced to
 * the schema's types. A body without a content type is read as JSON (an empty one counts as `{}`). A body the
 * API cannot read as its content type says (another type; JSON sent as a form, which is what `curl -d` does
 * unless told otherwise; no type and no JSON) is a 400 naming the content types it takes, never a list of
 * missing fields.
 */
export function guardBody(schema: ZodType): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    // Work its deadline already answered stops here: the request's body cannot be read any more.
    assertLive(c.get('ctx'));
    const header = c.req.header('content-type');
    const type = mediaType(header);
    if (type === FORM_TYPE) {
      const text = await c.req.text();
      if (/^\s*[{[]/.test(text)) {
        throw contentTypeError(
          header,
          `says the body is form fields, but it is JSON: send it with Content-Type: application/json`,
          'Request body is JSON sent as application/x-www-form-urlencoded (what curl -d sends unless told otherwise): send it with Content-Type: application/json',
        );
      }
      replaceBody(c.req, JSON.stringify(coerceFormValues(schema, parseFormBody(text))));
    } else if (type === '') {
      const text = await c.req.text();
      const json = text.trim() === '' ? '{}' : text;
      parseJsonBody(json, () =>
        contentTypeError(
          header,
          `is missing, and the body is not JSON: ${SEND}`,
          `Request body has no Content-Type and is not JSON: ${SEND}`,
        ),
      );
      replaceBody(c.req, json);
    } else if (JSON_TYPE.test(type)) {
      // The text stays cached on the request, so the route's validator parses what was checked here.
      parseJsonBody(await c.req.text());
    } else {
      throw unsupportedContentType(header);
    }
    return next();
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
