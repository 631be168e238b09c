import { participants } from '@stampcard/db';
import { type SQL, sql } from 'drizzle-orm';
import { monthKey, monthStart } from '../../clock';
import type { Ctx } from '../../context';
import type { LeaderboardType } from '../../rules/leaderboard';
import type { ParticipantRow, Ranks } from '../../serialize';
import { aheadOf, type BoardKey, scoreOf } from './boards';

/** The statement behind `participantRanks`: the row's monthly counts and, per leaderboard, how many are ahead. */
export function ranksQuery(participantId: string, month: string): SQL {
  const monthly = scoreOf('CURRENT_MONTH', month, 'me');
  const prevMonthly = scoreOf('PREV_MONTH', month, 'me');
  return sql`
    select ${monthly} as m, ${prevMonthly} as pm,
      ${aheadOf('ALL_TIME', month)} as rank,
      case when ${monthly} > 0 then ${aheadOf('CURRENT_MONTH', month)} else -1 end as monthly,
      case when ${prevMonthly} > 0 then ${aheadOf('PREV_MONTH', month)} else -1 end as prev
    from ${participants} me where me.id = ${participantId}`;
}

/**
 * A participant's three ranks, in one statement: 1-based, by count descending, ties by earlier join (then id), as
 * the leaderboards order them (a participant's rank is its position there). A monthly rank is 0 when the
 * participant has no action in that month (it is not on that leaderboard); the previous month's is null (omitted)
 * when it joined after that month. Each rank costs two short index ranges (see `aheadOf`).
 */
export async function participantRanks(ctx: Ctx, p: ParticipantRow): Promise<Ranks> {
  const month = monthKey(ctx.clock.now());
  const [row] = await ctx.db.execute<{ m: number; pm: number; rank: number; monthly: number; prev: number }>(
    ranksQuery(p.id, month),
  );
  // Removed meanwhile: ranked as if alone.
  const r = row ?? { m: 0, pm: 0, rank: 0, monthly: -1, prev: -1 };
  const existedLastMonth = p.createdAt < monthStart(month);
  return {
    rank: r.rank + 1,
    monthlyRank: r.monthly + 1,
    prevMonthlyRank: existedLastMonth ? r.prev + 1 : null,
  };
}

/** Where a participant stands on one leaderboard: its count, how many are ranked before it, its index key. */
export type BoardPosition = BoardKey & { ahead: number };

/** The statement behind `boardPosition`. */
export function positionQuery(
  campaignId: string,
  participantId: string,
  type: LeaderboardType,
  month: string,
): SQL {
  const score = scoreOf(type, month, 'me');
  const onBoard = type === 'ALL_TIME' ? sql`true` : sql`${score} > 0`;
  return sql`
    select ${score} as score, me.created_at::text as created_at,
      case when ${onBoard} then ${aheadOf(type, month)} end as ahead
    from ${participants} me where me.id = ${participantId} and me.campaign_id = ${campaignId}`;
}

/**
 * Where participant `participantId` of the campaign stands on the `type` leaderboard this month (one statement),
 * or null when the campaign has no such participant or it is not on that leaderboard (no action in that month).
 */
export async function boardPosition(
  ctx: Ctx,
  campaignId: string,
  participantId: string,
  type: LeaderboardType,
): Promise<BoardPosition | null> {
  const month = monthKey(ctx.clock.now());
  const [row] = await ctx.db.execute<{ score: number; created_at: string; ahead: number | null }>(
    positionQuery(campaignId, participantId, type, month),
  );
  if (!row || row.ahead === null) return null;
  return { score: row.score, createdAt: row.created_at, id: participantId, ahead: row.ahead };
}
