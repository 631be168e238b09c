import { type ImportCountMode, type ImportFormat, participantImports, rewards } from '@stampcard/db';
import { and, eq, ne } from 'drizzle-orm';
import { type Ctx, handOff, unitOfWork } from '../../context';
import { DomainError, invalidState, validationError } from '../../errors';
import { newId } from '../../ids';
import { isUniqueViolation } from '../../pg-error';
import { readImportHeader } from '../../rules/imports';
import type { CampaignRow } from '../../serialize';
import { firstRecord, hashUpload, storeUpload } from './file';

export type ParticipantImportRow = typeof participantImports.$inferSelect;

export type ImportOptions = {
  mode: ImportCountMode;
  silent: boolean;
  format: ImportFormat;
  idempotencyKey?: string;
};

/** Campaign statuses in which participants may be imported (as added). */
const OPEN_FOR_IMPORTS: readonly CampaignRow['status'][] = ['DRAFT', 'IN_PROGRESS'];

/**
 * Starts an import: streams its file into PostgreSQL (`storeUpload`), reads the header against the campaign's
 * rewards (a problem is a 400 naming the column, with nothing stored), and commits the `participant_imports`
 * row QUEUED with its file, all in one unit of work; once committed, its first batch's job is queued by the
 * after-commit hand-off (`participant-import.run`, batch 0: the counting pass).
 *
 * Answers `created: false` with the import that is already there when the same file was imported into the
 * campaign with the same options (and did not fail), or when `idempotencyKey` was used for it: nothing is
 * imported twice. The same key with another file is a 400.
 */
export async function startImport(
  ctx: Ctx,
  campaign: CampaignRow,
  options: ImportOptions,
  body: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
): Promise<{ import: ParticipantImportRow; created: boolean }> {
  if (!OPEN_FOR_IMPORTS.includes(campaign.status)) {
    throw invalidState(
      `The campaign is ${campaign.status}: participants are imported only while it is DRAFT or IN_PROGRESS`,
    );
  }
  const id = newId('participantImport');
  const now = ctx.clock.now();
  let sha256 = '';
  try {
    const row = await unitOfWork(ctx, async (tx) => {
      await tx.db.insert(participantImports).values({
        id,
        accountId: campaign.accountId,
        campaignId: campaign.id,
        status: 'QUEUED',
        mode: options.mode,
        silent: options.silent,
        format: options.format,
        // Who starts it is who its rows are changed by (`runImportStep`); a caller naming no one is the operator.
        actorKind: ctx.actor?.kind ?? 'OPERATOR',
        actorId: ctx.actor?.id ?? null,
        idempotencyKey: options.idempotencyKey ?? null,
        // Set once the whole file is in: until then no other import can match it.
        contentSha256: `pending:${id}`,
        columns: [],
        sizeBytes: 0,
        byteOffset: 0,
        createdAt: now,
        touchedAt: now,
      });
      const file = await storeUpload(tx, id, body);
      sha256 = file.sha256;
      const rewardIds = await tx.db
        .select({ id: rewards.id })
        .from(rewards)
        .where(eq(rewards.campaignId, campaign.id));
      const { problems } = readImportHeader(file.header, new Set(rewardIds.map((r) => r.id)));
      if (problems.length > 0) {
        throw validationError(
          problems.map((p) => ({
            location: 'body',
            param: p.column > 0 ? `header[${p.column}]` : 'header',
            value: null,
            msg: p.msg,
          })),
        );
      }
      const [stored] = await tx.db
        .update(participantImports)
        .set({
          contentSha256: file.sha256,
          columns: file.header.map((c) => c.trim()),
          sizeBytes: file.sizeBytes,
          byteOffset: file.dataOffset,
        })
        .where(eq(participantImports.id, id))
        .returning();
      await handOff(tx, { importSteps: [{ importId: id, batch: 0 }] });
      return stored!;
    });
    return { import: row, created: true };
  } catch (err) {
    if (isUniqueViolation(err, 'participant_imports_idempotency_uq') && options.idempotencyKey) {
      // Refused at the first insert, before the body was read: read it now, only to compare.
      if (sha256 === '') sha256 = await hashUpload(body);
      const [found] = await ctx.db
        .select()
        .from(participantImports)
        .where(
          and(
            eq(participantImports.campaignId, campaign.id),
            eq(participantImports.idempotencyKey, options.idempotencyKey),
          ),
        );
      if (
        found &&
        found.contentSha256 === sha256 &&
        found.mode === options.mode &&
        found.silent === options.silent
      )
        return { import: found, created: false };
      throw validationError(
        [
          {
            location: 'headers',
            param: 'Idempotency-Key',
            value: null,
            msg: 'was used for another import (another file or other options)',
          },
        ],
        'This Idempotency-Key was used for another import of this campaign',
      );
    }
    if (isUniqueViolation(err, 'participant_imports_content_uq')) {
      const [found] = await ctx.db
        .select()
        .from(participantImports)
        .where(
          and(
            eq(participantImports.campaignId, campaign.id),
            eq(participantImports.contentSha256, sha256),
            eq(participantImports.mode, options.mode),
            eq(participantImports.silent, options.silent),
            ne(participantImports.status, 'FAILED'),
          ),
        );
      if (found) return { import: found, created: false };
    }
    throw err;
  }
}

/** What a header column will become, as the console shows it before an import starts. */
export type ColumnPreview = { column: string; becomes: string; problem: string | null };

/**
 * The header of a file about to be imported (its first bytes: the header must end within them), read as the
 * import will read it: each column's meaning (a reward's title for a count), and the problems that would make
 * the upload a 400. Nothing is stored.
 */
export async function previewImport(
  ctx: Ctx,
  campaign: CampaignRow,
  head: Buffer,
): Promise<{ columns: ColumnPreview[]; problems: string[] }> {
  let header: string[];
  try {
    header = (await firstRecord(head, true)).cells;
  } catch (err) {
    if (err instanceof DomainError) return { columns: [], problems: [err.message] };
    throw err;
  }
  const titles = new Map(
    (
      await ctx.db
        .select({ id: rewards.id, title: rewards.title })
        .from(rewards)
        .where(eq(rewards.campaignId, campaign.id))
    ).map((r) => [r.id, r.title ?? r.id]),
  );
  const { columns, problems } = readImportHeader(header, new Set(titles.keys()));
  const byColumn = new Map(problems.filter((p) => p.column > 0).map((p) => [p.column, p.msg]));
  return {
    columns: header.map((name, i) => {
      const meaning = columns[i];
      const becomes =
        !meaning || meaning.kind === 'unknown'
          ? 'not imported'
          : meaning.kind === 'field'
            ? `the participant's ${meaning.name}`
            : meaning.kind === 'metadata'
              ? `metadata key "${meaning.key}"`
              : `a count carried over for "${titles.get(meaning.rewardId) ?? meaning.rewardId}"`;
      return { column: name.trim(), becomes, problem: byColumn.get(i + 1) ?? null };
    }),
    problems: problems.map((p) => p.msg),
  };
}
