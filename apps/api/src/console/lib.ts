import { badStringReason, clip, validationError } from '@stampcard/core';
import type { Context } from 'hono';
import type { AppEnv } from '../env';
import { idParam } from '../routes/admin/schemas';

type C = Context<AppEnv>;

/**
 * A form body's text fields (nothing for another type of body), in an object without a prototype. A field
 * whose name or value PostgreSQL would refuse (NUL, an unpaired surrogate) is a 400 here, before any of it
 * reaches a statement.
 */
export async function formOf(c: C): Promise<Record<string, string | undefined>> {
  const type = c.req.header('content-type') ?? '';
  const fields: Record<string, string | undefined> = Object.create(null);
  if (!/^(application\/x-www-form-urlencoded|multipart\/form-data)\b/i.test(type)) return fields;
  for (const [name, value] of Object.entries(await c.req.parseBody())) {
    const text = typeof value === 'string' ? value : undefined;
    const reason = badStringReason(name) ?? (text === undefined ? null : badStringReason(text));
    if (reason) {
      throw validationError([{ location: 'body', param: clip(name, 64), value: null, msg: reason }]);
    }
    fields[name] = text;
  }
  return fields;
}

/** Every value of a form field that may repeat (checkboxes), checked as `formOf` checks them. */
export async function formListOf(c: C, name: string): Promise<string[]> {
  await formOf(c);
  const value = (await c.req.parseBody({ all: true }))[name];
  const values = Array.isArray(value) ? value : value === undefined ? [] : [value];
  return values.filter((v): v is string => typeof v === 'string');
}

/** What a console page's routes need of the console: its form reader and the session's CSRF token. */
export type ConsoleHelpers = {
  formOf: (c: C) => Promise<Record<string, string | undefined>>;
  /** Every value of a field that may repeat (checkboxes). */
  formListOf: (c: C, name: string) => Promise<string[]>;
  csrfOf: (c: C) => string;
};

/** An id from a query or a form: what every operator id fits in, or undefined. */
export function idOf(value: string | undefined): string | undefined {
  const parsed = idParam.safeParse(value);
  return parsed.success ? parsed.data : undefined;
}

/** A time as the console's tables show it: UTC, to the minute. */
export const utcMinute = (ms: number) => new Date(ms).toISOString().replace('T', ' ').slice(0, 16);

/**
 * The link to a page whose lists page on each with its own cursor: `list` moved on to `nextId`, the others
 * where they stand, beside the page's `fixed` parameters.
 */
export function pagedOn<K extends string>(
  path: string,
  fixed: Record<string, string>,
  cursors: Partial<Record<K, string>>,
  list: K,
  nextId: string,
) {
  const params = new URLSearchParams(fixed);
  for (const [name, at] of Object.entries({ ...cursors, [list]: nextId }) as [string, string | undefined][]) {
    if (at) params.set(name, at);
  }
  return `${path}?${params}`;
}

/**
 * The Content-Security-Policy of the console's and the portal's pages: everything they load comes from this
 * service, scripts from files only (no inline script, no eval: htmx reads its settings from a meta element);
 * `frameAncestors` says which pages may frame them (`frame-ancestors 'none'` for the console).
 */
export const pagePolicy = (frameAncestors: string) =>
  [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "font-src 'self'",
    "connect-src 'self'",
    "form-action 'self'",
    "base-uri 'none'",
    "object-src 'none'",
    frameAncestors,
  ].join('; ');
