import {
  type Ctx,
  exportLoyaltyActions,
  exportParticipants,
  exportRefusedRows,
  LOYALTY_ACTION_EXPORT_COLUMNS,
  type LoyaltyActionExportFilter,
  PARTICIPANT_EXPORT_COLUMNS,
  type ParticipantImportRow,
  REFUSED_ROW_COLUMNS,
} from '@stampcard/core';
import { stringify } from 'csv-stringify/sync';
import type { Context } from 'hono';
import type { AppEnv } from '../env';
import { takeSlot } from './take-slot';

/** What an export is written as: CSV (the default) or NDJSON (asked for with `Accept: application/x-ndjson`). */
export type ExportFormat = 'csv' | 'ndjson';

export const EXPORT_MEDIA_TYPES = { csv: 'text/csv; charset=utf-8', ndjson: 'application/x-ndjson' } as const;

/** NDJSON when the `Accept` header names it (`application/x-ndjson` or `application/ndjson`), else CSV. */
export function exportFormatOf(accept: string | undefined): ExportFormat {
  return /application\/(x-)?ndjson/i.test(accept ?? '') ? 'ndjson' : 'csv';
}

/** A CSV cell: text as it is, numbers and booleans as written in JSON, objects as their JSON, null empty. */
function cell(v: unknown): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'string') return v;
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

/** Rows as text: CSV records (RFC 4180: quoted when they hold a comma, quote or line break) or NDJSON lines. */
export function formatRows(
  format: ExportFormat,
  columns: readonly string[],
  rows: readonly Record<string, unknown>[],
): string {
  if (format === 'ndjson') return rows.map((r) => `${JSON.stringify(r)}\n`).join('');
  return stringify(
    rows.map((r) => columns.map((c) => cell(r[c]))),
    { record_delimiter: '\r\n' },
  );
}

/** The CSV header line (NDJSON has none). */
export const headerOf = (format: ExportFormat, columns: readonly string[]) =>
  format === 'csv' ? stringify([[...columns]], { record_delimiter: '\r\n' }) : '';

/**
 * A streamed export: `run` reads the rows and hands each page to its `write`, which sends them and waits while
 * the reader is behind (the stream's queue holds a few pages). The answer ends when `run` has read every row;
 * a `run` that fails (the database, the reader too slow) breaks the connection instead of ending it, so a
 * partial file is never taken for a whole one; a reader that goes away makes `write` throw, which ends `run`.
 * `done` is called once, whatever happened.
 */
export function exportStream(
  format: ExportFormat,
  columns: readonly string[],
  run: (write: (rows: Record<string, unknown>[]) => Promise<void>) => Promise<number>,
  done: (err: unknown, rows: number) => void,
): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  let wake: (() => void) | null = null;
  let cancelled = false;
  let sent = 0;
  const gone = () => new Error('the reader of the export went away');
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        const send = async (text: string) => {
          if (cancelled) throw gone();
          if (text) controller.enqueue(encoder.encode(text));
          while (!cancelled && (controller.desiredSize ?? 1) <= 0) {
            await new Promise<void>((resolve) => {
              wake = resolve;
            });
          }
          if (cancelled) throw gone();
        };
        void (async () => {
          // The header goes with the first page: the first byte a reader gets is then read from the export's
          // snapshot, which PostgreSQL takes at the transaction's first read, and nothing written after it shows.
          let header = headerOf(format, columns);
          try {
            const rows = await run(async (page) => {
              sent += page.length;
              await send(header + formatRows(format, columns, page));
              header = '';
            });
            if (header) await send(header);
            controller.close();
            done(null, rows);
          } catch (err) {
            if (!cancelled) controller.error(err);
            done(err, sent);
          }
        })();
      },
      pull() {
        wake?.();
        wake = null;
      },
      cancel() {
        cancelled = true;
        wake?.();
        wake = null;
      },
    },
    // Four chunks (pages) queued at most before the reading waits for the reader.
    { highWaterMark: 4 },
  );
}

/** What an export streams: its name (the file's and the log's), its campaign, its columns, and how to read it. */
export type ExportJob = {
  name: 'participants' | 'loyalty-actions' | 'refused-rows';
  campaignId: string;
  columns: readonly string[];
  run: (ctx: Ctx, write: (rows: Record<string, unknown>[]) => Promise<void>) => Promise<number>;
};

/**
 * The answer of an export, for the API and the console alike: 429 when this process runs as many exports as it
 * may, else the rows streamed in the format `Accept` asks for (`format` overrides it), as a download. Past the
 * request's deadline the export goes on: its own bounds are each page's statement timeout and the
 * idle-in-transaction timeout of a reader that stops.
 */
export function exportResponse(c: Context<AppEnv>, job: ExportJob, format?: ExportFormat): Response {
  const release = takeSlot(c, c.get('exportSlots'), 'exports are running');
  if (release instanceof Response) return release;
  const as = format ?? exportFormatOf(c.req.header('accept'));
  const { logger } = c.get('deps');
  const requestId = c.get('requestId');
  const { name, campaignId } = job;
  const body = exportStream(
    as,
    job.columns,
    (write) => job.run({ ...c.get('ctx'), signal: undefined }, write),
    (err, rows) => {
      release();
      if (err) logger.warn({ err, requestId, campaignId, rows }, `${name} export cut off`);
      else logger.info({ requestId, campaignId, rows }, `${name} export done`);
    },
  );
  return c.body(body, 200, {
    'Content-Type': EXPORT_MEDIA_TYPES[as],
    'Content-Disposition': `attachment; filename="${name}-${campaignId}.${as}"`,
    'Cache-Control': 'no-store',
  });
}

/** A campaign's participants export (`exportParticipants`). */
export const participantsExport = (campaignId: string): ExportJob => ({
  name: 'participants',
  campaignId,
  columns: PARTICIPANT_EXPORT_COLUMNS,
  run: (ctx, write) => exportParticipants(ctx, campaignId, write),
});

/** A campaign's loyalty-actions export (`exportLoyaltyActions`), filtered. */
export const loyaltyActionsExport = (campaignId: string, filter: LoyaltyActionExportFilter): ExportJob => ({
  name: 'loyalty-actions',
  campaignId,
  columns: LOYALTY_ACTION_EXPORT_COLUMNS,
  run: (ctx, write) => exportLoyaltyActions(ctx, campaignId, filter, write),
});

/** An import's refused rows (`exportRefusedRows`): the reason, then the file's own columns. */
export const refusedRowsExport = (imp: ParticipantImportRow): ExportJob => ({
  name: 'refused-rows',
  campaignId: imp.campaignId,
  columns: [...REFUSED_ROW_COLUMNS, ...imp.columns],
  run: (ctx, write) => exportRefusedRows(ctx, imp, write),
});
