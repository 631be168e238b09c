import { z } from '@hono/zod-openapi';
import {
  type CampaignRow,
  COUNT_COLUMN_PREFIX,
  IMPORT_FIELD_COLUMNS,
  IMPORT_MAX_CARRIED_COUNT,
  type ImportOptions,
  METADATA_COLUMN_PREFIX,
  serializeImport,
  startImport,
  validationError,
} from '@stampcard/core';
import { IMPORT_COUNT_MODES } from '@stampcard/db';
import { stringify } from 'csv-stringify/sync';
import type { Context, MiddlewareHandler } from 'hono';
import type { AppEnv } from '../env';
import { zodIssues } from '../errors';
import { IDEMPOTENCY_KEY_HEADER, IDEMPOTENT_REPLAYED_HEADER, KEY_PATTERN } from '../middleware/idempotency';
import { contentTypeError, JSON_TYPE, mediaType } from './body';
import { parseJsonBody } from './parse-body';
import { takeSlot } from './take-slot';

/** The upload routes (`POST …/participants/imports`, the operator's `…/participants/import`, the console's). */
const UPLOAD_PATH =
  /^(\/(v1\/campaign|admin\/v1\/campaigns)\/[^/]+\/participants\/imports?|\/console\/imports\/upload)$/;

/** A CSV upload to an import route: the only request whose body may pass 1 MiB, streamed, never held whole. */
export function isImportUpload(c: Context<AppEnv>): boolean {
  return (
    c.req.method === 'POST' &&
    UPLOAD_PATH.test(c.req.path) &&
    mediaType(c.req.header('content-type')) === 'text/csv'
  );
}

/** Time an upload may take on top of the request's budget, in ms (a 50 MiB file over a slow link). */
export const IMPORT_UPLOAD_MS = 120_000;
/** Most rows in a JSON import (larger ones go as CSV). */
export const IMPORT_JSON_MAX_ROWS = 10_000;

export const importQuery = z.strictObject({
  mode: z.enum(IMPORT_COUNT_MODES).default('SET').openapi({
    description:
      '`SET` (the default): each `loyaltyActionCount.<rewardId>` cell raises the count to its value (a count already there or past it is left: counts never go down), so importing a file again adds nothing. `ADD`: each cell adds its value.',
  }),
  silent: z.enum(['true', 'false']).default('false').openapi({
    description:
      '`true`: record no event for what the import creates, changes or counts, so no webhook is sent for it and nothing shows in the event feed (for moving an existing program over: its rewards were sent already). Rewards still unlock.',
  }),
});

const cellText = z.string().max(10_000);

/** A JSON import's row: the CSV columns as fields, `metadata` and `loyaltyActionCount` as objects. */
export const ImportJsonRow = z
  .strictObject({
    email: cellText,
    firstName: cellText.nullable().optional(),
    lastName: cellText.nullable().optional(),
    notes: cellText.nullable().optional(),
    ipAddress: cellText.nullable().optional(),
    fingerprint: cellText.nullable().optional(),
    metadata: z
      .record(
        z.string().min(1).max(255),
        z.union([z.string().max(10_000), z.number(), z.boolean(), z.null()]),
      )
      .optional(),
    loyaltyActionCount: z
      .record(z.string().min(1).max(255), z.number().int().min(0).max(IMPORT_MAX_CARRIED_COUNT))
      .optional(),
  })
  .openapi('ImportRow', {
    description:
      'A row of a JSON import: the columns of a CSV import as fields. Each row is checked on its own when the import runs: a row that is not a valid participant is refused (see `refusedRows`), the others go on.',
  });

export const ImportJsonBody = z
  .array(ImportJsonRow)
  .max(IMPORT_JSON_MAX_ROWS)
  .openapi({ description: `At most ${IMPORT_JSON_MAX_ROWS} rows (and 1 MiB); a larger import goes as CSV` });

/**
 * A JSON import as the CSV file the worker reads: the columns every row uses, in order of first use; a metadata
 * cell holds its value's JSON (so `"007"` stays a string), the import's format says so.
 */
export function jsonRowsToCsv(rows: z.infer<typeof ImportJsonBody>): Buffer {
  const columns = new Set<string>(['email']);
  for (const row of rows) {
    for (const f of IMPORT_FIELD_COLUMNS) if (row[f] !== undefined && row[f] !== null) columns.add(f);
    for (const k of Object.keys(row.metadata ?? {})) columns.add(`${METADATA_COLUMN_PREFIX}${k}`);
    for (const r of Object.keys(row.loyaltyActionCount ?? {})) columns.add(`${COUNT_COLUMN_PREFIX}${r}`);
  }
  const header = [...columns];
  const records = rows.map((row) =>
    header.map((col) => {
      if (col.startsWith(METADATA_COLUMN_PREFIX)) {
        const key = col.slice(METADATA_COLUMN_PREFIX.length);
        return row.metadata && Object.hasOwn(row.metadata, key) ? JSON.stringify(row.metadata[key]) : '';
      }
      if (col.startsWith(COUNT_COLUMN_PREFIX)) {
        const id = col.slice(COUNT_COLUMN_PREFIX.length);
        const n =
          row.loyaltyActionCount && Object.hasOwn(row.loyaltyActionCount, id)
            ? row.loyaltyActionCount[id]
            : undefined;
        return n === undefined ? '' : String(n);
      }
      return (row[col as (typeof IMPORT_FIELD_COLUMNS)[number]] as string | null | undefined) ?? '';
    }),
  );
  return Buffer.from(stringify([header, ...records], { record_delimiter: '\r\n' }));
}

const SEND =
  'send a CSV file with Content-Type: text/csv, or a JSON array of rows with Content-Type: application/json';

/** The body of an upload: a JSON one is read (1 MiB at most) and checked as every JSON body is; CSV streams. */
export const guardImportBody: MiddlewareHandler<AppEnv> = async (c, next) => {
  const header = c.req.header('content-type');
  const type = mediaType(header);
  if (JSON_TYPE.test(type)) parseJsonBody(await c.req.text());
  else if (type !== 'text/csv')
    throw contentTypeError(
      header,
      `is not supported: ${SEND}`,
      `Unsupported Content-Type ${type || '(none)'}: ${SEND}`,
    );
  await next();
};

const emptyBody: AsyncIterable<Uint8Array> = { async *[Symbol.asyncIterator]() {} };

/**
 * Starts an import from the request (either route), in one of the process's upload slots (429 `CONCURRENCY`
 * when `IMPORT_CONCURRENCY` uploads are streaming in already): its options from the query, its key from the
 * `Idempotency-Key` header (the import keeps it: the key store of other requests would hold the whole body), its
 * file from the body. 202 with the import, QUEUED; 200 with the import already there for the same file and
 * options (or the same key), marked `Idempotent-Replayed`.
 */
export async function answerImportUpload(
  c: Context<AppEnv>,
  campaign: CampaignRow,
  query: z.infer<typeof importQuery>,
) {
  const release = takeSlot(c, c.get('importSlots'), 'imports are uploading');
  if (release instanceof Response) return release;
  try {
    return await startFromBody(c, campaign, query);
  } finally {
    release();
  }
}

async function startFromBody(c: Context<AppEnv>, campaign: CampaignRow, query: z.infer<typeof importQuery>) {
  // An upload has more time than a request: its own bound is IMPORT_UPLOAD_MS.
  c.get('extendDeadline')?.(IMPORT_UPLOAD_MS);
  const key = c.req.header(IDEMPOTENCY_KEY_HEADER);
  if (key !== undefined && !KEY_PATTERN.test(key)) {
    throw validationError([
      {
        location: 'headers',
        param: IDEMPOTENCY_KEY_HEADER,
        value: key,
        msg: 'must be 1 to 255 printable ASCII characters, without spaces',
      },
    ]);
  }
  let format: ImportOptions['format'] = 'CSV';
  let body: AsyncIterable<Uint8Array> | Iterable<Uint8Array> =
    (c.req.raw.body as AsyncIterable<Uint8Array> | null) ?? emptyBody;
  if (mediaType(c.req.header('content-type')) !== 'text/csv') {
    const source = JSON.parse(await c.req.text()) as unknown;
    const parsed = ImportJsonBody.safeParse(source);
    if (!parsed.success) throw validationError(zodIssues(parsed.error, 'json', source));
    format = 'JSON';
    body = [jsonRowsToCsv(parsed.data)];
  }
  const { import: imp, created } = await startImport(
    c.get('ctx'),
    campaign,
    {
      mode: query.mode,
      silent: query.silent === 'true',
      format,
      ...(key ? { idempotencyKey: key } : {}),
    },
    body,
  );
  const view = serializeImport(imp, []);
  const location = `/v1/campaign/${encodeURIComponent(campaign.id)}/participants/imports/${imp.id}`;
  if (created) return c.json(view, 202, { Location: location });
  return c.json(view, 200, { Location: location, [IDEMPOTENT_REPLAYED_HEADER]: 'true' });
}
