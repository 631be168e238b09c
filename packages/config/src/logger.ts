import { createRequire } from 'node:module';
import { type Logger, pino } from 'pino';

export type { Logger };

const STACK_FRAMES = 12;

/**
 * What a log line keeps of an error: its class, code, the constraint, table and column a database error
 * names, the stack frames, and the same of its causes. Never its message or its fields: a database
 * driver's message and parameters carry emails, names and metadata (`Failed query: … params: …`), and a
 * domain error's message may name the email it did not find.
 */
export function safeError(err: unknown, depth = 0): Record<string, unknown> {
  if (err === null || typeof err !== 'object') return { type: typeof err };
  const e = err as Record<string, unknown>;
  const out: Record<string, unknown> = {
    type: (e.constructor as { name?: string } | undefined)?.name ?? 'Object',
  };
  if (typeof e.name === 'string' && e.name !== out.type) out.name = e.name;
  for (const [from, to] of [
    ['code', 'code'],
    ['errno', 'errno'],
    ['constraint_name', 'constraint'],
    ['constraint', 'constraint'],
    ['table_name', 'table'],
    ['column_name', 'column'],
    ['routine', 'routine'],
  ] as const) {
    const v = e[from];
    if ((typeof v === 'string' && v.length <= 128) || typeof v === 'number') out[to] ??= v;
  }
  if (typeof e.stack === 'string') {
    const frames = e.stack
      .split('\n')
      .filter((line) => line.startsWith('    at '))
      .slice(0, STACK_FRAMES);
    if (frames.length > 0) out.stack = frames.map((f) => f.trim()).join('\n');
  }
  if (e.cause !== undefined && e.cause !== err && depth < 4) out.cause = safeError(e.cause, depth + 1);
  return out;
}

/** How log lines are written: one JSON object per line, or pino-pretty's readable lines. */
export type LogFormat = 'json' | 'pretty';

type PrettyFactory = (opts: {
  destination?: pino.DestinationStream | number;
  sync?: boolean;
}) => pino.DestinationStream;

/**
 * Structured logs (pino). Errors go under `err` (or `error`) and pass through `safeError`, so no log line
 * carries what a user sent, in either format.
 * @param opts.format `json`, one object per line, or `pretty` (pino-pretty, loaded only then, for a developer's
 * terminal: the same fields, readable). @defaultValue `json`
 * @param opts.destination where lines go. @defaultValue standard output
 */
export function createLogger(opts: {
  level: string;
  name: string;
  format?: LogFormat;
  destination?: pino.DestinationStream;
}): Logger {
  const options = {
    level: opts.level,
    name: opts.name,
    base: { service: opts.name },
    serializers: { err: (e: unknown) => safeError(e), error: (e: unknown) => safeError(e) },
  };
  if (opts.format !== 'pretty') return pino(options, opts.destination);
  // Loaded on demand: a JSON logger (production) never loads it. Synchronous, as pino's own stdout is, so a
  // process that exits right after logging loses no line.
  const pretty = createRequire(import.meta.url)('pino-pretty') as PrettyFactory;
  return pino(options, pretty({ destination: opts.destination ?? 1, sync: true }));
}
