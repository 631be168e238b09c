import { type ActionStatus, loyaltyActions, participants } from '@stampcard/db';
import { and, asc, eq, gte, lt, sql } from 'drizzle-orm';
import type { Ctx } from '../../context';
import { EXPORT_PAGE_ROWS, readSnapshot } from './snapshot';

/**
 * The columns of a loyalty-actions export, in this order: the action as the API shows it, with its
 * participant's email (empty once the participant is deleted), `metadata` as a JSON object, the ids of the
 * rewards it unlocked, and its times in ISO 8601.
 */
export const LOYALTY_ACTION_EXPORT_COLUMNS = [
  'id',
  'participantId',
  'participantEmail',
  'rewardId',
  'status',
  'reason',
  'unlockedRewardIds',
  'metadata',
  'createdAt',
  'appliedAt',
] as const;

export type LoyaltyActionExportRow = Record<(typeof LOYALTY_ACTION_EXPORT_COLUMNS)[number], unknown>;

export type LoyaltyActionExportFilter = {
  /** Accepted at or after (UTC ms). */
  from?: number;
  /** Accepted before (UTC ms). */
  to?: number;
  status?: ActionStatus;
};

/** A row with its place in the ledger's order: `at` is `created_at` as PostgreSQL writes it (microseconds kept). */
type Keyed = LoyaltyActionExportRow & { at: string };

/** The ledger's order: when accepted, then the id byte by byte (`loyalty_actions_campaign_created_idx`). */
const byteWiseId = sql`${loyaltyActions.id} collate "C"`;

/**
 * The campaign's loyalty actions accepted in `[from, to)` (with `status`, if given) as of one moment
 * (`readSnapshot`), oldest first, a page at a time to `write`. Answers how many there were.
 */
export async function exportLoyaltyActions(
  ctx: Ctx,
  campaignId: string,
  filter: LoyaltyActionExportFilter,
  write: (rows: LoyaltyActionExportRow[]) => Promise<void>,
): Promise<number> {
  const a = loyaltyActions;
  return readSnapshot<Keyed>(
    ctx,
    (db, after) =>
      db
        .select({
          id: a.id,
          participantId: a.participantId,
          participantEmail: participants.email,
          rewardId: a.rewardId,
          status: a.status,
          reason: a.reason,
          unlockedRewardIds: a.unlockedRewardIds,
          metadata: a.metadata,
          createdAt: sql<string>`to_char(${a.createdAt} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`,
          appliedAt: sql<
            string | null
          >`to_char(${a.appliedAt} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`,
          at: sql<string>`${a.createdAt}::text`,
        })
        .from(a)
        .leftJoin(participants, eq(participants.id, a.participantId))
        .where(
          and(
            eq(a.campaignId, campaignId),
            filter.from === undefined ? undefined : gte(a.createdAt, new Date(filter.from)),
            filter.to === undefined ? undefined : lt(a.createdAt, new Date(filter.to)),
            filter.status ? eq(a.status, filter.status) : undefined,
            after
              ? sql`(${a.createdAt}, ${byteWiseId}) > (${after.at}::timestamptz, ${after.id})`
              : undefined,
          ),
        )
        .orderBy(asc(a.createdAt), asc(byteWiseId))
        .limit(EXPORT_PAGE_ROWS),
    (rows) => write(rows.map(({ at: _at, ...row }) => ({ ...row, metadata: row.metadata ?? {} }))),
  );
}
