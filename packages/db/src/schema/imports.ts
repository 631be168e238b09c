import { sql } from 'drizzle-orm';
import {
  bigint,
  boolean,
  customType,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
} from 'drizzle-orm/pg-core';
import { accounts } from './accounts';
import type { AuditActorKind } from './audit';
import { campaigns } from './campaigns';

export const IMPORT_STATUSES = ['QUEUED', 'RUNNING', 'SUCCEEDED', 'FAILED'] as const;
export type ImportStatus = (typeof IMPORT_STATUSES)[number];
/** How a row's `loyaltyActionCount.<rewardId>` cells count: added to the count, or raising it to the value. */
export const IMPORT_COUNT_MODES = ['ADD', 'SET'] as const;
export type ImportCountMode = (typeof IMPORT_COUNT_MODES)[number];
/** What the file was: a CSV upload, or a JSON array of rows (stored as CSV whose metadata cells hold JSON). */
export const IMPORT_FORMATS = ['CSV', 'JSON'] as const;
export type ImportFormat = (typeof IMPORT_FORMATS)[number];

const bytea = customType<{ data: Buffer; driverData: Buffer }>({ dataType: () => 'bytea' });

/**
 * A bulk import of participants into a campaign: one row each, its durable state. The uploaded file is kept in
 * `participant_import_chunks` until the import ends; its rows are taken a batch at a time
 * (`participant-import.run` jobs), each batch in one transaction with the cursor (`byteOffset`, `rowsDone`,
 * `batches`) and the counts, so a batch run twice does nothing and a dead worker's import resumes where its last
 * batch committed (the worker's relay finds it by `touchedAt`).
 */
export const participantImports = pgTable(
  'participant_imports',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    campaignId: text('campaign_id')
      .notNull()
      .references(() => campaigns.id, { onDelete: 'cascade' }),
    status: text('status').$type<ImportStatus>().notNull(),
    mode: text('mode').$type<ImportCountMode>().notNull(),
    /** No events (nor webhooks) for what the import creates or counts. */
    silent: boolean('silent').notNull(),
    format: text('format').$type<ImportFormat>().notNull(),
    /** Who started it (the audit log's actor: its rows are recorded as that actor's, through the import). */
    actorKind: text('actor_kind').$type<AuditActorKind>().notNull(),
    /** The API key's id (never the key), the console session's or portal link's (hashed); null for the operator. */
    actorId: text('actor_id'),
    idempotencyKey: text('idempotency_key'),
    /** SHA-256 of the file as uploaded (hex): the same rows imported again answer the first import. */
    contentSha256: text('content_sha256').notNull(),
    /** The header, in file order. */
    columns: jsonb('columns').$type<string[]>().notNull(),
    sizeBytes: bigint('size_bytes', { mode: 'number' }).notNull(),
    /** Where the next batch starts reading, in bytes from the start of the file. */
    byteOffset: bigint('byte_offset', { mode: 'number' }).notNull(),
    /** Batches run so far (the counting pass is batch 0): the next batch's number and job id. */
    batches: integer('batches').notNull().default(0),
    rowsTotal: integer('rows_total'),
    rowsDone: integer('rows_done').notNull().default(0),
    createdCount: integer('created_count').notNull().default(0),
    updatedCount: integer('updated_count').notNull().default(0),
    unchangedCount: integer('unchanged_count').notNull().default(0),
    refusedCount: integer('refused_count').notNull().default(0),
    /** Loyalty actions queued for carried-over counts. */
    actionCount: integer('action_count').notNull().default(0),
    /** Why a FAILED import stopped (the file could not be read past a row), without any of its values. */
    error: text('error'),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
    startedAt: timestamp('started_at', { withTimezone: true, mode: 'date' }),
    finishedAt: timestamp('finished_at', { withTimezone: true, mode: 'date' }),
    /** When its last batch committed: a QUEUED or RUNNING import untouched for long has lost its job. */
    touchedAt: timestamp('touched_at', { withTimezone: true, mode: 'date' }).notNull(),
  },
  (t) => [
    uniqueIndex('participant_imports_idempotency_uq')
      .on(t.campaignId, t.idempotencyKey)
      .where(sql`${t.idempotencyKey} is not null`),
    // The same file, with the same options, is imported once; a FAILED one may be tried again.
    uniqueIndex('participant_imports_content_uq')
      .on(t.campaignId, t.contentSha256, t.mode, t.silent)
      .where(sql`${t.status} <> 'FAILED'`),
    index('participant_imports_campaign_idx').on(t.campaignId, t.createdAt),
    // The relay's sweep: imports under way, least recently touched first.
    index('participant_imports_open_idx').on(t.touchedAt).where(sql`${t.status} in ('QUEUED', 'RUNNING')`),
  ],
);

/** An import's file, in order, in chunks of at most `IMPORT_CHUNK_BYTES`; deleted when the import ends. */
export const participantImportChunks = pgTable(
  'participant_import_chunks',
  {
    importId: text('import_id')
      .notNull()
      .references(() => participantImports.id, { onDelete: 'cascade' }),
    seq: integer('seq').notNull(),
    data: bytea('data').notNull(),
  },
  (t) => [primaryKey({ columns: [t.importId, t.seq] })],
);

/**
 * The emails an import has taken so far (normalised), with their row: a later row with the same email is refused
 * as a duplicate, across batches and after a resume. Deleted when the import ends.
 */
export const participantImportEmails = pgTable(
  'participant_import_emails',
  {
    importId: text('import_id')
      .notNull()
      .references(() => participantImports.id, { onDelete: 'cascade' }),
    email: text('email').notNull(),
    row: integer('row').notNull(),
  },
  (t) => [primaryKey({ columns: [t.importId, t.email] })],
);

/** A refused row of an import: its number (1 is the first row after the header), why, and its cells. */
export const participantImportRefusals = pgTable(
  'participant_import_refusals',
  {
    importId: text('import_id')
      .notNull()
      .references(() => participantImports.id, { onDelete: 'cascade' }),
    row: integer('row').notNull(),
    /** An error code of the API's (`VALIDATION_ERROR`, `DUPLICATE_ROW`, `PARTICIPANT_BLOCKED`, `USAGE_LIMIT`). */
    reason: text('reason').notNull(),
    message: text('message').notNull(),
    /** The row's cells as read, so every refused row can be downloaded, fixed and imported again. */
    cells: jsonb('cells').$type<string[]>().notNull(),
  },
  (t) => [primaryKey({ columns: [t.importId, t.row] })],
);
