import { createHash } from 'node:crypto';
import { participantImportChunks } from '@stampcard/db';
import { parse } from 'csv-parse';
import { and, eq } from 'drizzle-orm';
import { assertLive, type Ctx } from '../../context';
import { validationError } from '../../errors';
import { IMPORT_MAX_BYTES, IMPORT_MAX_ROW_BYTES } from '../../rules/imports';

/** An import's file is stored in chunks of exactly this many bytes (the last one may be shorter). */
export const IMPORT_CHUNK_BYTES = 256 * 1024;

export type StoredFile = { sha256: string; sizeBytes: number; header: string[]; dataOffset: number };

const fileTooLarge = () =>
  validationError(
    [
      {
        location: 'body',
        param: '',
        value: null,
        msg: `the file is larger than ${IMPORT_MAX_BYTES / 1024 / 1024} MiB`,
      },
    ],
    `The import file is larger than ${IMPORT_MAX_BYTES / 1024 / 1024} MiB`,
  );

const headerProblem = (msg: string) =>
  validationError(
    [{ location: 'body', param: 'header', value: null, msg }],
    `The import file cannot be read: ${msg}`,
  );

/** The parser every reading of an import's file uses, from `offset` (the BOM only at the very start). */
const csvParser = (offset: number) =>
  parse({
    bom: offset === 0,
    info: true,
    relax_column_count: true,
    skip_empty_lines: true,
    max_record_size: IMPORT_MAX_ROW_BYTES,
  });

/**
 * Streams an upload into `participant_import_chunks`, in the caller's unit of work: one INSERT per chunk of
 * `IMPORT_CHUNK_BYTES`, so at most one chunk is held in memory; hashed (SHA-256) on the way; a body past
 * `IMPORT_MAX_BYTES` is a 400 (the unit of work rolls back what was stored). Answers the hash, the size, the
 * header (the first record) and where the rows start.
 */
export async function storeUpload(
  tx: Ctx,
  importId: string,
  body: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
): Promise<StoredFile> {
  const hash = createHash('sha256');
  let size = 0;
  let seq = 0;
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let first: Buffer | null = null;
  const flush = async (chunk: Buffer) => {
    assertLive(tx);
    if (seq === 0) first = chunk;
    await tx.db.insert(participantImportChunks).values({ importId, seq, data: chunk });
    seq += 1;
  };
  for await (const part of body) {
    size += part.byteLength;
    if (size > IMPORT_MAX_BYTES) throw fileTooLarge();
    hash.update(part);
    pending.push(Buffer.from(part));
    pendingBytes += part.byteLength;
    while (pendingBytes >= IMPORT_CHUNK_BYTES) {
      const all = Buffer.concat(pending);
      await flush(all.subarray(0, IMPORT_CHUNK_BYTES));
      const rest = all.subarray(IMPORT_CHUNK_BYTES);
      pending = rest.byteLength > 0 ? [rest] : [];
      pendingBytes = rest.byteLength;
    }
  }
  if (pendingBytes > 0) await flush(Buffer.concat(pending));
  if (!first) throw headerProblem('the file is empty');
  const header = await firstRecord(first, size <= IMPORT_CHUNK_BYTES);
  return { sha256: hash.digest('hex'), sizeBytes: size, header: header.cells, dataOffset: header.bytes };
}

/** The SHA-256 of an upload not stored (its import is there already), read to its end within the bound. */
export async function hashUpload(body: AsyncIterable<Uint8Array> | Iterable<Uint8Array>): Promise<string> {
  const hash = createHash('sha256');
  let size = 0;
  for await (const part of body) {
    size += part.byteLength;
    if (size > IMPORT_MAX_BYTES) throw fileTooLarge();
    hash.update(part);
  }
  return hash.digest('hex');
}

/** The header: the file's first record, which must end within its first chunk. */
export async function firstRecord(
  chunk: Buffer,
  wholeFile: boolean,
): Promise<{ cells: string[]; bytes: number }> {
  const found = await readRecordsFrom([chunk], 0, 1).catch((err: Error) => {
    throw headerProblem(`the header row is not valid CSV (${err.message.slice(0, 80)})`);
  });
  const record = found.records[0];
  if (!record) throw headerProblem('the file has no header row');
  // Read to the chunk's end with more of the file after it: the header went on past the chunk.
  const lastByte = chunk[chunk.byteLength - 1];
  if (found.done && !wholeFile && lastByte !== 0x0a && lastByte !== 0x0d)
    throw headerProblem(`the header row is longer than ${IMPORT_CHUNK_BYTES / 1024} KiB`);
  return { cells: record.cells, bytes: record.end };
}

/** A record read from an import's file: its cells, and the byte offset just past it (the next one's start). */
export type FileRecord = { cells: string[]; end: number };

/**
 * Reads up to `limit` records from `parts` (the file's bytes from `offset` on), in order, and counts them
 * (`keep: false` only counts). `done`: the file ended within them (no record after the last one answered). A CSV error (an unclosed quote, a row past
 * `IMPORT_MAX_ROW_BYTES`) rejects, with csv-parse's message (which names the line, never the content).
 */
export async function readRecordsFrom(
  parts: Iterable<Buffer> | AsyncIterable<Buffer>,
  offset: number,
  limit: number,
  opts: { keep?: boolean } = {},
): Promise<{ records: FileRecord[]; count: number; done: boolean }> {
  const keep = opts.keep ?? true;
  const parser = csvParser(offset);
  const records: FileRecord[] = [];
  let count = 0;
  let failure: Error | null = null;
  parser.on('error', (err) => {
    failure = err;
  });
  parser.on('readable', () => {
    let r: { record: string[]; info: { bytes: number } } | null;
    // biome-ignore lint/suspicious/noAssignInExpressions: the stream's own reading idiom
    while ((r = parser.read()) !== null) {
      if (count >= limit) continue;
      count += 1;
      if (keep) records.push({ cells: r.record, end: offset + r.info.bytes });
    }
  });
  const ended = new Promise<void>((resolve) => {
    parser.on('end', resolve);
    parser.on('error', () => resolve());
  });
  for await (const part of parts) {
    if (failure || count >= limit) break;
    await new Promise<void>((resolve) => (parser.write(part) ? resolve() : parser.once('drain', resolve)));
    // Records are handed over on 'readable': let them arrive before deciding whether to read on.
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  if (failure) throw failure;
  if (count >= limit) {
    parser.destroy();
    return { records, count, done: false };
  }
  parser.end();
  await ended;
  if (failure) throw failure;
  return { records, count, done: true };
}

/** The stored chunks of an import's file from byte `offset` on, in order, fetched one at a time. */
export async function* fileFrom(tx: Ctx, importId: string, offset: number): AsyncGenerator<Buffer> {
  let seq = Math.floor(offset / IMPORT_CHUNK_BYTES);
  let skip = offset % IMPORT_CHUNK_BYTES;
  for (;;) {
    const [row] = await tx.db
      .select({ data: participantImportChunks.data })
      .from(participantImportChunks)
      .where(and(eq(participantImportChunks.importId, importId), eq(participantImportChunks.seq, seq)));
    if (!row) return;
    const data = skip > 0 ? row.data.subarray(skip) : row.data;
    skip = 0;
    seq += 1;
    if (data.byteLength > 0) yield data;
  }
}
