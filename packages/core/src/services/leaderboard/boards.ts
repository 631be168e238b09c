import { leaderboardBuckets, participants } from '@stampcard/db';
import { type SQL, sql } from 'drizzle-orm';
import { previousMonthKey } from '../../clock';
import { boardOf, type LeaderboardType } from '../../rules/leaderboard';

/**
 * How each leaderboard is read from `participants`, in SQL. A leaderboard is made of one or two "sources", each a
 * range of one rank index (see the indexes of `packages/db/src/schema/participants.ts`) already in rank order:
 *
 * - ALL_TIME: every participant of the campaign, by `loyalty_action_count` (0 included: everyone has a rank);
 * - CURRENT_MONTH: the rows whose `counts_month` is this month, by `monthly_loyalty_action_count`, above 0;
 * - PREV_MONTH: last month's counts live in two kinds of rows, since months roll lazily: rows written this month
 *   keep them in `prev_monthly_loyalty_action_count`, rows last written last month in
 *   `monthly_loyalty_action_count`. No row is in both, so the leaderboard is the merge of the two ranges.
 *
 * Rank order is count descending, then earlier join (`created_at`, then id byte by byte). Ids and counts are
 * read from the index key (`(-count, created_at, id)`), so pages and rank counts are index-only.
 */

type CountColumn =
  | 'loyalty_action_count'
  | 'monthly_loyalty_action_count'
  | 'prev_monthly_loyalty_action_count';

/** One index range of a leaderboard: the rows with `countsMonth` (any when null), ranked by `count`. */
type Source = { countsMonth: string | null; count: CountColumn };

/** A position in a leaderboard: where a page starts. `createdAt` is PostgreSQL's text, to the microsecond. */
export type BoardKey = { score: number; createdAt: string; id: string };

export function sourcesOf(type: LeaderboardType, month: string): Source[] {
  if (type === 'ALL_TIME') return [{ countsMonth: null, count: 'loyalty_action_count' }];
  if (type === 'CURRENT_MONTH') return [{ countsMonth: month, count: 'monthly_loyalty_action_count' }];
  return [
    { countsMonth: month, count: 'prev_monthly_loyalty_action_count' },
    { countsMonth: previousMonthKey(month), count: 'monthly_loyalty_action_count' },
  ];
}

const col = (alias: string, name: string) => sql.raw(`${alias}.${name}`);

/** The rows of `source` in a campaign, for the table aliased `alias`. */
function inSource(s: Source, alias: string, campaignId: SQL): SQL {
  const campaign = sql`${col(alias, 'campaign_id')} = ${campaignId}`;
  if (s.countsMonth === null) return campaign;
  return sql`${campaign} and ${col(alias, 'counts_month')} = ${s.countsMonth} and ${col(alias, s.count)} > 0`;
}

/** The index key of `source`, in rank order: the ORDER BY of a page and the left side of its cursor. */
function rankKey(s: Source, alias: string): SQL {
  return sql`(-${col(alias, s.count)}), ${col(alias, 'created_at')}, ${col(alias, 'id')} collate "C"`;
}

/** The count of the row aliased `alias` on the leaderboard (0 when it is not on it). */
export function scoreOf(type: LeaderboardType, month: string, alias: string): SQL {
  const sources = sourcesOf(type, month);
  if (sources.length === 1 && sources[0]!.countsMonth === null) return col(alias, sources[0]!.count);
  const cases = sources.map(
    (s) => sql`when ${col(alias, 'counts_month')} = ${s.countsMonth} then ${col(alias, s.count)}`,
  );
  return sql`(case ${sql.join(cases, sql` `)} else 0 end)`;
}

/**
 * How many participants are ranked before the row aliased `me` on the leaderboard: those of its campaign with a
 * higher count (the buckets above its count: one short index range of `leaderboard_buckets`), plus those with
 * its count who joined earlier (a range of each source's index, counted index-only). So a rank costs the size
 * of its tie, never a scan of the campaign.
 */
export function aheadOf(type: LeaderboardType, month: string, me = 'me'): SQL {
  const score = scoreOf(type, month, me);
  const joinedBefore = sql`(q.created_at, q.id collate "C") < (${col(me, 'created_at')}, ${col(me, 'id')} collate "C")`;
  const ties = sourcesOf(type, month).map(
    (s) => sql`(select count(*)::int from ${participants} q
      where ${inSource(s, 'q', col(me, 'campaign_id'))} and (-q.${sql.raw(s.count)}) = -${score} and ${joinedBefore})`,
  );
  const higher = sql`(select coalesce(sum(b.participants), 0)::int from ${leaderboardBuckets} b
    where b.campaign_id = ${col(me, 'campaign_id')} and b.board = ${boardOf(type, month)} and b.score > ${score})`;
  return sql`(${higher} + ${sql.join(ties, sql` + `)})`;
}

/**
 * The ids of a leaderboard page, in rank order: `limit` rows from `from` (included), or from the top. One index
 * range per source, merged (PREV_MONTH) by the same order.
 */
export function pageIds(
  type: LeaderboardType,
  month: string,
  campaignId: string,
  from: BoardKey | null,
  limit: number,
): SQL {
  const branches = sourcesOf(type, month).map((s) => {
    const after = from
      ? sql`and (${rankKey(s, 'q')}) >= (${-from.score}::int, ${from.createdAt}::timestamptz, ${from.id})`
      : sql``;
    return sql`(select q.id, q.created_at, q.${sql.raw(s.count)} as score from ${participants} q
      where ${inSource(s, 'q', sql`${campaignId}`)} ${after}
      order by ${rankKey(s, 'q')} limit ${limit})`;
  });
  if (branches.length === 1) return branches[0]!;
  return sql`select u.id, u.created_at, u.score from (${sql.join(branches, sql` union all `)}) u
    order by (-u.score), u.created_at, u.id collate "C" limit ${limit}`;
}
