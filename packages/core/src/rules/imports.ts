import type { ImportCountMode, ImportFormat, Metadata } from '@stampcard/db';
import {
  badStringReason,
  emailSchema,
  fingerprintSchema,
  ipAddressSchema,
  metadataSchema,
  nameSchema,
  notesSchema,
} from './participant-fields';
import { FORBIDDEN_METADATA_KEYS } from './points';

/** Largest CSV file an import takes, in bytes. */
export const IMPORT_MAX_BYTES = 50 * 1024 * 1024;
/** Most columns in an import's header. */
export const IMPORT_MAX_COLUMNS = 200;
/** Largest row, in bytes (a row past it stops the import: the file cannot be read on from there). */
export const IMPORT_MAX_ROW_BYTES = 64 * 1024;
/** Largest count one cell of `loyaltyActionCount.<rewardId>` carries over (each count is a loyalty action). */
export const IMPORT_MAX_CARRIED_COUNT = 1000;
/** Refused rows shown in an import's answer (all of them are in its refused-rows CSV). */
export const IMPORT_REFUSALS_SHOWN = 100;

/** Columns with a fixed name; `metadata.<key>` and `loyaltyActionCount.<rewardId>` are the others. */
export const IMPORT_FIELD_COLUMNS = [
  'email',
  'firstName',
  'lastName',
  'notes',
  'ipAddress',
  'fingerprint',
] as const;
type FieldColumn = (typeof IMPORT_FIELD_COLUMNS)[number];
export const METADATA_COLUMN_PREFIX = 'metadata.';
export const COUNT_COLUMN_PREFIX = 'loyaltyActionCount.';

/** What a header column means. */
export type ImportColumn =
  | { kind: 'field'; name: FieldColumn }
  | { kind: 'metadata'; key: string }
  | { kind: 'count'; rewardId: string }
  /** A column the header may not have (its problem says why): a file with one is refused. */
  | { kind: 'unknown' };

/** A problem with the header: the whole file is refused (400) before anything is stored. */
export type HeaderProblem = { column: number; msg: string };

const excerpt = (s: string) => (s.length > 40 ? `${s.slice(0, 40)}…` : s);

/**
 * Reads a header, a meaning for each column in order: every column known (`email` required, each at most once), at most `IMPORT_MAX_COLUMNS`, each
 * `loyaltyActionCount.<rewardId>` naming one of `rewardIds` (the campaign's rewards). Answers the columns'
 * meanings, or the problems (a column's number counts from 1).
 */
export function readImportHeader(
  header: readonly string[],
  rewardIds: ReadonlySet<string>,
): { columns: ImportColumn[]; problems: HeaderProblem[] } {
  const problems: HeaderProblem[] = [];
  const columns: ImportColumn[] = [];
  if (header.length > IMPORT_MAX_COLUMNS)
    problems.push({ column: 0, msg: `the header has more than ${IMPORT_MAX_COLUMNS} columns` });
  const seen = new Set<string>();
  header.forEach((raw, i) => {
    const name = raw.trim();
    const column = i + 1;
    const bad = badStringReason(name);
    if (bad) {
      problems.push({ column, msg: `column ${column} ${bad}` });
      columns.push({ kind: 'unknown' });
      return;
    }
    if (seen.has(name)) problems.push({ column, msg: `column "${excerpt(name)}" appears more than once` });
    seen.add(name);
    if ((IMPORT_FIELD_COLUMNS as readonly string[]).includes(name)) {
      columns.push({ kind: 'field', name: name as FieldColumn });
    } else if (name.startsWith(METADATA_COLUMN_PREFIX)) {
      const key = name.slice(METADATA_COLUMN_PREFIX.length);
      if (key.length < 1 || key.length > 255 || FORBIDDEN_METADATA_KEYS.has(key))
        problems.push({
          column,
          msg: `column "${excerpt(name)}": a metadata key is 1 to 255 characters, not __proto__, constructor or prototype`,
        });
      columns.push({ kind: 'metadata', key });
    } else if (name.startsWith(COUNT_COLUMN_PREFIX)) {
      const rewardId = name.slice(COUNT_COLUMN_PREFIX.length);
      if (!rewardIds.has(rewardId))
        problems.push({ column, msg: `column "${excerpt(name)}" names no reward of this campaign` });
      columns.push({ kind: 'count', rewardId });
    } else {
      columns.push({ kind: 'unknown' });
      problems.push({
        column,
        msg: `column "${excerpt(name)}" is not one of ${IMPORT_FIELD_COLUMNS.join(', ')}, metadata.<key> or loyaltyActionCount.<rewardId>`,
      });
    }
  });
  if (!seen.has('email')) problems.push({ column: 0, msg: 'the header has no email column' });
  return { columns, problems };
}

/** A row read and held to the participant's bounds: what to create or change, and the counts to carry over. */
export type ReadImportRow = {
  email: string;
  fields: Partial<Record<Exclude<FieldColumn, 'email'>, string>>;
  metadata: Metadata | null;
  /** rewardId → count, for the columns whose cell is not empty. */
  counts: Map<string, number>;
};

/** Why a row is refused (an API error code) and what about it, without echoing more than an excerpt. */
export type RowRefusal = { reason: 'VALIDATION_ERROR'; message: string };

/** A number in a CSV cell of a `metadata.` column (no leading zeros: `007` stays a string). */
const NUMBER_CELL = /^-?(0|[1-9]\d{0,14})(\.\d{1,15})?$/;

/**
 * The value of a metadata cell. In a CSV file a cell that reads as a number is stored as that number, `true` and
 * `false` as booleans, anything else as the string. The cells of a JSON import hold each value's JSON, so it
 * keeps its type. `undefined`: the cell is not a value metadata may hold.
 */
export function metadataCell(
  cell: string,
  format: ImportFormat,
): string | number | boolean | null | undefined {
  if (format === 'JSON') {
    try {
      const v: unknown = JSON.parse(cell);
      return v === null || ['string', 'number', 'boolean'].includes(typeof v)
        ? (v as string | number | boolean | null)
        : undefined;
    } catch {
      return undefined;
    }
  }
  if (NUMBER_CELL.test(cell)) return Number(cell);
  if (cell === 'true') return true;
  if (cell === 'false') return false;
  return cell;
}

const fieldSchemas = {
  firstName: nameSchema,
  lastName: nameSchema,
  notes: notesSchema,
  ipAddress: ipAddressSchema,
  fingerprint: fingerprintSchema,
} as const;

/**
 * Reads one row against its header: as many cells as columns, an email, each field within its bounds, counts
 * whole numbers from 0 to `IMPORT_MAX_CARRIED_COUNT`. An empty cell leaves its field (or metadata key, or
 * count) as it is. Pure: the same row always reads the same.
 */
export function readImportRow(
  columns: readonly ImportColumn[],
  cells: readonly string[],
  format: ImportFormat,
): ReadImportRow | RowRefusal {
  const refuse = (message: string): RowRefusal => ({ reason: 'VALIDATION_ERROR', message });
  if (cells.length !== columns.length)
    return refuse(`the row has ${cells.length} cells where the header has ${columns.length} columns`);
  let email: string | undefined;
  const fields: ReadImportRow['fields'] = {};
  const metadata: Record<string, string | number | boolean | null> = Object.create(null);
  let hasMetadata = false;
  const counts = new Map<string, number>();
  for (let i = 0; i < columns.length; i++) {
    const column = columns[i]!;
    const cell = cells[i]!.trim();
    if (cell === '' || column.kind === 'unknown') continue;
    const bad = badStringReason(cell);
    const name =
      column.kind === 'field'
        ? column.name
        : column.kind === 'metadata'
          ? `${METADATA_COLUMN_PREFIX}${column.key}`
          : `${COUNT_COLUMN_PREFIX}${column.rewardId}`;
    if (bad) return refuse(`${name} ${bad}`);
    if (column.kind === 'field') {
      if (column.name === 'email') {
        if (!emailSchema.safeParse(cell).success) return refuse('email must be an email address');
        email = cell;
        continue;
      }
      const parsed = fieldSchemas[column.name].safeParse(cell);
      if (!parsed.success) return refuse(`${name}: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
      fields[column.name] = cell;
    } else if (column.kind === 'metadata') {
      const value = metadataCell(cell, format);
      if (value === undefined) return refuse(`${name} must be a string, number, boolean or null`);
      metadata[column.key] = value;
      hasMetadata = true;
    } else {
      if (!/^\d{1,7}$/.test(cell) || Number(cell) > IMPORT_MAX_CARRIED_COUNT)
        return refuse(`${name} must be a whole number from 0 to ${IMPORT_MAX_CARRIED_COUNT}`);
      counts.set(column.rewardId, Number(cell));
    }
  }
  if (email === undefined) return refuse('email is empty');
  if (hasMetadata && !metadataSchema.safeParse(metadata).success)
    return refuse('metadata is over its bounds: at most 100 keys, 16 KiB as JSON');
  return { email, fields, metadata: hasMetadata ? { ...metadata } : null, counts };
}

/**
 * How many loyalty actions carry a count over: `ADD` adds the cell's count; `SET` raises the count to the cell's
 * (counts never go down: one already there, or past it, carries nothing). `current` is what the participant
 * counts for the reward, its actions still queued included.
 */
export function actionsToCarry(mode: ImportCountMode, requested: number, current: number): number {
  return mode === 'ADD' ? requested : Math.max(0, requested - current);
}
