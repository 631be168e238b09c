import { participantImportRefusals, participantImports } from '@stampcard/db';
import { and, asc, desc, eq, gt, inArray, lt } from 'drizzle-orm';
import type { Ctx, ImportStep } from '../../context';
import { notFound } from '../../errors';
import { IMPORT_REFUSALS_SHOWN } from '../../rules/imports';
import type { ParticipantImportView } from '../../views';
import { EXPORT_PAGE_ROWS, readSnapshot } from '../exports/snapshot';
import type { ParticipantImportRow as ImportRow } from './start';

export type ImportRefusal = { row: number; reason: string; message: string; cells: string[] };

/** An import of the campaign with its first refused rows (`IMPORT_REFUSALS_SHOWN`); 404 when there is none. */
export async function showImport(
  ctx: Ctx,
  campaignId: string,
  importId: string,
): Promise<{ import: ImportRow; refusals: ImportRefusal[] }> {
  const [found] = await ctx.db
    .select()
    .from(participantImports)
    .where(and(eq(participantImports.id, importId), eq(participantImports.campaignId, campaignId)));
  if (!found) throw notFound(`Import ${importId.slice(0, 64)}`);
  const refusals = await refusalPage(ctx, importId, 0, IMPORT_REFUSALS_SHOWN);
  return { import: found, refusals };
}

/** The campaign's latest imports, newest first. */
export async function listImports(ctx: Ctx, campaignId: string, limit: number): Promise<ImportRow[]> {
  return ctx.db
    .select()
    .from(participantImports)
    .where(eq(participantImports.campaignId, campaignId))
    .orderBy(desc(participantImports.createdAt), desc(participantImports.id))
    .limit(limit);
}

/** Refused rows of an import after row `afterRow`, in row order, `limit` at most. */
export async function refusalPage(
  ctx: Ctx,
  importId: string,
  afterRow: number,
  limit: number,
): Promise<ImportRefusal[]> {
  return ctx.db
    .select({
      row: participantImportRefusals.row,
      reason: participantImportRefusals.reason,
      message: participantImportRefusals.message,
      cells: participantImportRefusals.cells,
    })
    .from(participantImportRefusals)
    .where(and(eq(participantImportRefusals.importId, importId), gt(participantImportRefusals.row, afterRow)))
    .orderBy(asc(participantImportRefusals.row))
    .limit(limit);
}

/**
 * Imports under way whose last batch committed more than `graceMs` ago: each one's next step, for the relay to
 * queue again (its job was lost with Redis, or its worker died between a batch's commit and the next enqueue).
 */
export async function findStalledImports(ctx: Ctx, graceMs: number, limit = 100): Promise<ImportStep[]> {
  const before = new Date(ctx.clock.now().getTime() - graceMs);
  const rows = await ctx.db
    .select({ importId: participantImports.id, batch: participantImports.batches })
    .from(participantImports)
    .where(
      and(
        inArray(participantImports.status, ['QUEUED', 'RUNNING']),
        lt(participantImports.touchedAt, before),
      ),
    )
    .orderBy(asc(participantImports.touchedAt))
    .limit(limit);
  return rows;
}

/** The path of an import's refused rows as CSV. */
export const refusedRowsPath = (imp: Pick<ImportRow, 'id' | 'campaignId'>) =>
  `/v1/campaign/${encodeURIComponent(imp.campaignId)}/participants/imports/${imp.id}/refused-rows`;

/** An import as the API shows it, with the refused rows given (its first ones). */
export function serializeImport(imp: ImportRow, refusals: ImportRefusal[]): ParticipantImportView {
  return {
    id: imp.id,
    campaignId: imp.campaignId,
    status: imp.status,
    mode: imp.mode,
    silent: imp.silent,
    format: imp.format,
    columns: imp.columns,
    sizeBytes: imp.sizeBytes,
    rowsTotal: imp.rowsTotal,
    rowsDone: imp.rowsDone,
    created: imp.createdCount,
    updated: imp.updatedCount,
    unchanged: imp.unchangedCount,
    refused: imp.refusedCount,
    loyaltyActionsQueued: imp.actionCount,
    refusedRows: refusals.map((r) => ({ row: r.row, reason: r.reason, message: r.message })),
    refusedRowsUrl: refusedRowsPath(imp),
    error: imp.error,
    createdAt: imp.createdAt.getTime(),
    startedAt: imp.startedAt?.getTime() ?? null,
    finishedAt: imp.finishedAt?.getTime() ?? null,
  };
}

/** The columns of an import's refused rows as CSV: these, then the file's own. */
export const REFUSED_ROW_COLUMNS = ['row', 'reason', 'message'] as const;

/**
 * Every refused row of an import, in row order, a page at a time, one snapshot (`readSnapshot`): its number,
 * reason and message, then its cells under the file's own column names (a row with more cells than columns
 * has the extra ones dropped), so the file can be fixed and imported again. Rows are null-prototype objects:
 * the column names come from the file.
 */
export async function exportRefusedRows(
  ctx: Ctx,
  imp: Pick<ImportRow, 'id' | 'columns'>,
  write: (rows: Record<string, unknown>[]) => Promise<void>,
): Promise<number> {
  return readSnapshot<ImportRefusal>(
    ctx,
    (db, after) => refusalPage({ ...ctx, db }, imp.id, after?.row ?? 0, EXPORT_PAGE_ROWS),
    (rows) =>
      write(
        rows.map((r) => {
          const out: Record<string, unknown> = Object.create(null);
          out.row = r.row;
          out.reason = r.reason;
          out.message = r.message;
          imp.columns.forEach((c, i) => {
            out[c] = r.cells[i] ?? '';
          });
          return out;
        }),
      ),
  );
}
