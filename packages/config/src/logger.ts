import { type Logger, pino } from 'pino';

export type { Logger };

/** Structured JSON logs, one object per line (pino). */
export function createLogger(opts: { level: string; name: string }): Logger {
  return pino({ level: opts.level, name: opts.name, base: { service: opts.name } });
}
