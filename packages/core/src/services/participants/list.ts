import { anyOf, type FraudRiskLevel, participantRewards, participants } from '@stampcard/db';
import { and, asc, desc, eq, getTableColumns, gt, type SQL, sql } from 'drizzle-orm';
import type { Ctx } from '../../context';
import { itemsWithinBudget } from '../../paging';
import { type ParticipantRewardRow, type ParticipantRow, serializeParticipant } from '../../serialize';
import { EMBEDDED_REWARDS, type ParticipantView } from '../../views';

export type ParticipantListQuery = {
  limit: number;
  /** Where the page starts: the `nextId` a previous page answered (any id works as a position). */
  nextId?: string;
  fraudRiskLevel?: FraudRiskLevel;
  /** true: participants with an approved reward; false: those without. */
  isWinner?: boolean;
  /** Participants whose email, first name or last name starts with this, in any case (the console's search). */
  search?: string;
};

/** The highest code point: `prefix || MAX` is past every string that starts with the prefix. */
const MAX_CHAR = '\u{10FFFF}';

/**
 * `column` starts with `prefix`: a range an index on the column reads, checked exactly by `starts_with` (so the
 * answer is right whatever the database's collation makes of the range).
 */
const startsWith = (column: SQL | typeof participants.email, prefix: string) =>
  sql`(${column} >= ${prefix} and ${column} < ${prefix + MAX_CHAR} and starts_with(${column}, ${prefix}))`;

/** The search's condition: three index ranges (email, first name, last name), OR-ed as one bitmap scan. */
function searchCondition(search: string): SQL {
  const prefix = search.trim().toLowerCase();
  return sql`(${startsWith(participants.email, prefix)} or ${startsWith(
    sql`lower(${participants.firstName})`,
    prefix,
  )} or ${startsWith(sql`lower(${participants.lastName})`, prefix)})`;
}

export type ParticipantPage = {
  participants: ParticipantView[];
  limit: number;
  nextId: string | null;
  more: boolean;
};

/** Ids compared byte by byte: the same order whatever the database's collation. */
export const byteWiseId = sql`${participants.id} collate "C"`;

/**
 * A campaign's participants by id ascending, cursor-paged: `nextId` is the id of the first participant of the
 * next page (null on the last one). The order is fixed, so a reader paging through sees every participant
 * that existed when it started exactly once, whatever is added or removed meanwhile; one added meanwhile is
 * seen once or not at all. The `nextId` is a position, not a reference: it still works once that participant
 * is deleted.
 *
 * Each participant comes with its newest rewards (one query for the page) and without ranks: a rank is a count
 * over the whole campaign per participant, which the leaderboard is for.
 */
export async function listParticipants(
  ctx: Ctx,
  campaignId: string,
  q: ParticipantListQuery,
): Promise<ParticipantPage> {
  const filters: SQL[] = [eq(participants.campaignId, campaignId)];
  if (q.nextId !== undefined) filters.push(sql`${byteWiseId} >= ${q.nextId}`);
  if (q.fraudRiskLevel) filters.push(eq(participants.fraudRiskLevel, q.fraudRiskLevel));
  if (q.search) filters.push(searchCondition(q.search));
  if (q.isWinner !== undefined) {
    filters.push(
      q.isWinner ? gt(participants.approvedRewardCount, 0) : eq(participants.approvedRewardCount, 0),
    );
  }
  const rows = await ctx.db
    .select()
    .from(participants)
    .where(and(...filters))
    .orderBy(asc(byteWiseId))
    .limit(q.limit + 1);
  return participantPage(ctx, rows, q.limit, (next) => next.id);
}

/**
 * A page from rows read with `limit + 1`: the first `limit` participants, each with its newest rewards (one
 * query, `newestRewardsOf`), as many as fit in the page's byte budget (`itemsWithinBudget`), and `nextId`,
 * made by `cursorOf` from the row that starts the next page.
 */
export async function participantPage(
  ctx: Ctx,
  rows: ParticipantRow[],
  limit: number,
  cursorOf: (next: ParticipantRow) => string,
): Promise<ParticipantPage> {
  const read = rows.slice(0, limit);
  const rewards = await newestRewardsOf(
    ctx,
    read.map((p) => p.id),
  );
  const now = ctx.clock.now();
  const items = read.map((p) => serializeParticipant(p, { now, rewards: rewards.get(p.id) ?? [] }));
  const shown = itemsWithinBudget(items);
  const more = rows.length > shown;
  return {
    participants: items.slice(0, shown),
    limit,
    nextId: more ? cursorOf(rows[shown]!) : null,
    more,
  };
}

/** A reward's place in a participant's history: when it was earned, then its id byte by byte. */
const rewardIdByteWise = sql`${participantRewards.id} collate "C"`;

/**
 * The newest `EMBEDDED_REWARDS` rewards of each participant of `ids` (newest first), in ONE statement: a
 * lateral join reads, per participant, the last entries of `participant_rewards_participant_created_idx`
 * backwards and stops at the bound, so a participant with a history of thousands costs what one with twenty
 * does. Each id maps to its list (maybe empty); the Participant object's `rewardCount` says how many there are.
 */
export async function newestRewardsOf(ctx: Ctx, ids: string[]): Promise<Map<string, ParticipantRewardRow[]>> {
  const rewards = new Map<string, ParticipantRewardRow[]>(ids.map((id) => [id, []]));
  if (ids.length === 0) return rewards;
  const newest = ctx.db
    .select()
    .from(participantRewards)
    .where(eq(participantRewards.participantId, participants.id))
    .orderBy(desc(participantRewards.createdAt), desc(rewardIdByteWise))
    .limit(EMBEDDED_REWARDS)
    .as('newest');
  const columns = getTableColumns(participantRewards);
  const fields = Object.fromEntries(
    Object.keys(columns).map((k) => [k, newest[k as keyof typeof columns]]),
  ) as {
    [K in keyof typeof columns]: (typeof newest)[K];
  };
  const rows = await ctx.db
    .select(fields)
    .from(participants)
    .crossJoinLateral(newest)
    .where(anyOf(participants.id, ids))
    // The join's output order is not promised: at most 20 rows a participant are sorted again.
    .orderBy(desc(newest.createdAt), desc(sql`${newest.id} collate "C"`));
  for (const reward of rows) rewards.get(reward.participantId)?.push(reward);
  return rewards;
}
