import { Writable } from 'node:stream';
import { createLogger, type Logger } from '@stampcard/config';

/** A logger whose lines (JSON text, one per entry) are kept for the test to read. */
export function capturedLogger(level = 'info'): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _enc, done) {
      lines.push(...String(chunk).split('\n').filter(Boolean));
      done();
    },
  });
  return { logger: createLogger({ level, name: 'stampcard-test', destination }), lines };
}
