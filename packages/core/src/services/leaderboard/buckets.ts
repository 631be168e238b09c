import { leaderboardBuckets } from '@stampcard/db';
import { eq, type SQL, sql } from 'drizzle-orm';
import type { Ctx } from '../../context';
import type { BucketMove } from '../../rules/leaderboard';

/** The net change of one bucket: `delta` participants more (or fewer) with `score` on `board` of a campaign. */
export type BucketChange = { campaignId: string; board: string; score: number; delta: number };

/**
 * Sums moves per bucket, drops those that cancel out, and sorts them by (campaign, board, score): the order every
 * writer locks bucket rows in, so two transactions moving the same buckets cannot deadlock.
 */
export function bucketChanges(moves: { campaignId: string; moves: BucketMove[] }[]): BucketChange[] {
  const sums = new Map<string, BucketChange>();
  for (const { campaignId, moves: list } of moves) {
    for (const m of list) {
      const key = JSON.stringify([campaignId, m.board, m.score]);
      const change = sums.get(key) ?? { campaignId, board: m.board, score: m.score, delta: 0 };
      change.delta += m.delta;
      sums.set(key, change);
    }
  }
  const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  return [...sums.values()]
    .filter((c) => c.delta !== 0)
    .sort((a, b) => cmp(a.campaignId, b.campaignId) || cmp(a.board, b.board) || a.score - b.score);
}

/**
 * The statement that applies `changes` (non-empty, from `bucketChanges`): one upsert, rows locked in the order
 * given. Callers run it on its own or as a CTE of a statement they make anyway (the worker's participants
 * update), after the participants' rows are locked and before the campaign's.
 */
export function moveBucketsStatement(changes: BucketChange[]): SQL {
  const rows = changes.map((c) => ({
    campaign_id: c.campaignId,
    board: c.board,
    score: c.score,
    delta: c.delta,
  }));
  return sql`insert into ${leaderboardBuckets} as b (campaign_id, board, score, participants)
    select v.campaign_id, v.board, v.score, v.delta
    from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as v(campaign_id text, board text, score integer, delta integer)
    order by v.campaign_id collate "C", v.board collate "C", v.score
    on conflict (campaign_id, board, score) do update set participants = b.participants + excluded.participants`;
}

/** Applies `changes` in the caller's transaction (nothing when empty). */
export async function moveBuckets(ctx: Ctx, changes: BucketChange[]): Promise<void> {
  if (changes.length > 0) await ctx.db.execute(moveBucketsStatement(changes));
}

/** Each of a participant row's counts above 0, on each board it counts on: what the buckets are made of. */
const countedFromRows = (campaignId: string) => sql`
  select p.campaign_id, v.board, v.score, count(*)::int as participants
  from participants p
  cross join lateral (values
    ('ALL', p.loyalty_action_count),
    (p.counts_month, p.monthly_loyalty_action_count),
    (to_char(to_date(p.counts_month, 'YYYY-MM') - interval '1 month', 'YYYY-MM'), p.prev_monthly_loyalty_action_count)
  ) as v(board, score)
  where p.campaign_id = ${campaignId} and v.score > 0
  group by 1, 2, 3`;

/** A campaign's non-empty buckets as counted from its participants' rows, by board then score. */
export async function countLeaderboardBuckets(
  ctx: Ctx,
  campaignId: string,
): Promise<{ board: string; score: number; participants: number }[]> {
  return [
    ...(await ctx.db.execute<{ board: string; score: number; participants: number }>(
      sql`select board, score, participants from (${countedFromRows(campaignId)}) c order by board, score`,
    )),
  ];
}

/** A campaign's non-empty buckets as stored, by board then score. */
export async function storedLeaderboardBuckets(
  ctx: Ctx,
  campaignId: string,
): Promise<{ board: string; score: number; participants: number }[]> {
  return ctx.db
    .select({
      board: leaderboardBuckets.board,
      score: leaderboardBuckets.score,
      participants: leaderboardBuckets.participants,
    })
    .from(leaderboardBuckets)
    .where(sql`${eq(leaderboardBuckets.campaignId, campaignId)} and ${leaderboardBuckets.participants} <> 0`)
    .orderBy(leaderboardBuckets.board, leaderboardBuckets.score);
}

/**
 * Replaces a campaign's buckets with a count of its participants' rows, in the caller's transaction: for
 * participants written in bulk (an import, the benchmark's seed). Boards of months older than the rows remember
 * are lost; leaderboards read only this month's and last month's.
 */
export async function rebuildLeaderboardBuckets(ctx: Ctx, campaignId: string): Promise<void> {
  await ctx.db.delete(leaderboardBuckets).where(eq(leaderboardBuckets.campaignId, campaignId));
  await ctx.db.execute(sql`
    insert into ${leaderboardBuckets} (campaign_id, board, score, participants) ${countedFromRows(campaignId)}`);
}
