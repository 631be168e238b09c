import { participants } from '@stampcard/db';
import { and, asc, eq, sql } from 'drizzle-orm';
import type { Ctx } from '../../context';
import { type ParticipantRow, serializeParticipant } from '../../serialize';
import { byteWiseId } from '../participants/list';
import { EXPORT_PAGE_ROWS, readSnapshot } from './snapshot';

/**
 * The columns of a participants export, in this order (the CSV's header; each NDJSON line is an object with
 * these keys). Values are the Participant's as the API shows it, except `createdAt`: an ISO 8601 time.
 */
export const PARTICIPANT_EXPORT_COLUMNS = [
  'id',
  'email',
  'firstName',
  'lastName',
  'notes',
  'loyaltyActionSource',
  'fraudRiskLevel',
  'fraudReasonCode',
  'isWinner',
  'loyaltyActionCount',
  'monthlyLoyaltyActionCount',
  'prevMonthlyLoyaltyActionCount',
  'loyaltyActionCountsPerReward',
  'metadata',
  'createdAt',
] as const;

export type ParticipantExportRow = Record<(typeof PARTICIPANT_EXPORT_COLUMNS)[number], unknown>;

/** One participant as an export row: its API view (monthly counts as of `now`), these columns only. */
function exportRow(p: ParticipantRow, now: Date): ParticipantExportRow {
  const view: Record<string, unknown> = {
    ...serializeParticipant(p, { now }),
    loyaltyActionCountsPerReward: p.loyaltyActionCountsPerReward,
    createdAt: p.createdAt.toISOString(),
  };
  return Object.fromEntries(PARTICIPANT_EXPORT_COLUMNS.map((c) => [c, view[c]])) as ParticipantExportRow;
}

/**
 * Every participant of the campaign as of one moment (`readSnapshot`), by id byte by byte
 * (`participants_page_idx`), a page at a time to `write`. Answers how many there were.
 */
export async function exportParticipants(
  ctx: Ctx,
  campaignId: string,
  write: (rows: ParticipantExportRow[]) => Promise<void>,
): Promise<number> {
  const now = ctx.clock.now();
  return readSnapshot<ParticipantRow>(
    ctx,
    (db, after) =>
      db
        .select()
        .from(participants)
        .where(
          and(eq(participants.campaignId, campaignId), after ? sql`${byteWiseId} > ${after.id}` : undefined),
        )
        .orderBy(asc(byteWiseId))
        .limit(EXPORT_PAGE_ROWS),
    (rows) => write(rows.map((p) => exportRow(p, now))),
  );
}
