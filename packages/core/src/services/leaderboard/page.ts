import { anyOf, participants } from '@stampcard/db';
import { monthKey } from '../../clock';
import type { Ctx } from '../../context';
import { notFound } from '../../errors';
import { itemsWithinBudget } from '../../paging';
import type { LeaderboardType } from '../../rules/leaderboard';
import { serializeParticipant } from '../../serialize';
import type { ParticipantView } from '../../views';
import { newestRewardsOf } from '../participants/list';
import { pageIds } from './boards';
import { boardPosition } from './ranks';

export type LeaderboardQuery = {
  type: LeaderboardType;
  limit: number;
  /** The `nextId` a previous page answered: the participant the page starts with. */
  nextId?: string;
};

export type LeaderboardPage = {
  participants: ParticipantView[];
  limit: number;
  nextId: string | null;
  more: boolean;
};

/** The rank field a leaderboard's items carry: the one of its type. */
export const RANK_FIELD = {
  ALL_TIME: 'rank',
  CURRENT_MONTH: 'monthlyRank',
  PREV_MONTH: 'prevMonthlyRank',
} as const satisfies Record<LeaderboardType, keyof ParticipantView>;

/**
 * A page of a campaign's leaderboard, in rank order (count descending, ties by earlier join, then id; see
 * `boards.ts`): ALL_TIME lists every participant, CURRENT_MONTH and PREV_MONTH only those with an action in
 * that UTC month (the others have a monthly rank of 0). Keyset-paged: `nextId` is the id of the first
 * participant of the next page (null on the last), and a page starts at that participant's current place. A
 * `nextId` that is not on this leaderboard (unknown, another campaign's, removed, or without an action in that
 * month) is a 404.
 *
 * Each participant carries its newest rewards (`newestRewardsOf`, at most 20) and the rank of this leaderboard
 * (`rank`, `monthlyRank` or `prevMonthlyRank`: its position, the same number its own read answers), not the
 * other two ranks; a page holds as many as fit in its byte budget (`itemsWithinBudget`). A page costs one index
 * range per source, the page's rows and newest rewards by id, and for a page after the first the rank of its
 * first participant (the size of its tie, see `aheadOf`).
 */
export async function leaderboardPage(
  ctx: Ctx,
  campaignId: string,
  q: LeaderboardQuery,
): Promise<LeaderboardPage> {
  const now = ctx.clock.now();
  let from = null;
  if (q.nextId !== undefined) {
    from = await boardPosition(ctx, campaignId, q.nextId, q.type);
    if (!from)
      throw notFound(`Participant ${q.nextId} on the ${q.type} leaderboard of campaign ${campaignId}`);
  }
  const ranked = [
    ...(await ctx.db.execute<{ id: string }>(pageIds(q.type, monthKey(now), campaignId, from, q.limit + 1))),
  ].map((r) => r.id);
  const more = ranked.length > q.limit;
  const shown = ranked.slice(0, q.limit);
  const [rows, rewards] = await Promise.all([
    shown.length > 0 ? ctx.db.select().from(participants).where(anyOf(participants.id, shown)) : [],
    newestRewardsOf(ctx, shown),
  ]);
  const byId = new Map(rows.map((p) => [p.id, p]));
  const first = (from?.ahead ?? 0) + 1;
  const field = RANK_FIELD[q.type];
  const items: ParticipantView[] = [];
  shown.forEach((id, i) => {
    // Removed between the two reads: left out, the others keep their places.
    const p = byId.get(id);
    if (p)
      items.push({ ...serializeParticipant(p, { now, rewards: rewards.get(id) ?? [] }), [field]: first + i });
  });
  // Cut by the byte budget: the next page starts at the first participant left out.
  const fit = itemsWithinBudget(items);
  if (fit < items.length)
    return { participants: items.slice(0, fit), limit: q.limit, nextId: items[fit]!.id, more: true };
  return { participants: items, limit: q.limit, nextId: more ? ranked[q.limit]! : null, more };
}
