import type { Context } from 'hono';
import type { AppEnv } from '../env';
import { idParam } from '../routes/admin/schemas';

type C = Context<AppEnv>;

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
