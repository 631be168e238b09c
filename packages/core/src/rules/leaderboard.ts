import { previousMonthKey } from '../clock';

/** The leaderboards a campaign has: all-time counts, this UTC month's, last UTC month's. */
export const LEADERBOARD_TYPES = ['ALL_TIME', 'CURRENT_MONTH', 'PREV_MONTH'] as const;
export type LeaderboardType = (typeof LEADERBOARD_TYPES)[number];

/** The board of all-time counts; a month's board is named by the month, `YYYY-MM`. */
export const ALL_TIME_BOARD = 'ALL';

/** The board a leaderboard of `type` reads when the current UTC month is `month`. */
export function boardOf(type: LeaderboardType, month: string): string {
  if (type === 'ALL_TIME') return ALL_TIME_BOARD;
  return type === 'CURRENT_MONTH' ? month : previousMonthKey(month);
}

/** The counters of a participant's row that leaderboards read. */
export type BoardCounters = {
  loyaltyActionCount: number;
  countsMonth: string;
  monthlyLoyaltyActionCount: number;
  prevMonthlyLoyaltyActionCount: number;
};

/**
 * A participant's count on a board, as its row stores it: the all-time count; the monthly count for its
 * `countsMonth`; the previous monthly count for the month before that; 0 for any other month (the row does not
 * remember it; a board of such a month is history that leaderboards no longer read).
 */
export function countOnBoard(p: BoardCounters, board: string): number {
  if (board === ALL_TIME_BOARD) return p.loyaltyActionCount;
  if (board === p.countsMonth) return p.monthlyLoyaltyActionCount;
  return board === previousMonthKey(p.countsMonth) ? p.prevMonthlyLoyaltyActionCount : 0;
}

/** One participant leaving (-1) or entering (+1) the bucket of `score` on `board`. */
export type BucketMove = { board: string; score: number; delta: 1 | -1 };

/**
 * How the leaderboard buckets move when a participant's counters go from `before` to `after` (null: it does not
 * exist), on the given boards: out of the bucket of its old count, into the one of its new count. Counts of 0 have
 * no bucket.
 */
export function bucketMoves(
  before: BoardCounters | null,
  after: BoardCounters | null,
  boards: readonly string[],
): BucketMove[] {
  const moves: BucketMove[] = [];
  for (const board of new Set(boards)) {
    const from = before ? countOnBoard(before, board) : 0;
    const to = after ? countOnBoard(after, board) : 0;
    if (from === to) continue;
    if (from > 0) moves.push({ board, score: from, delta: -1 });
    if (to > 0) moves.push({ board, score: to, delta: 1 });
  }
  return moves;
}

/**
 * The boards one action in `after.countsMonth` can change: all-time and that month. The month before keeps its
 * count (a roll moves the monthly count to `prev…`, the same number on the same board), and older boards are
 * history, kept as they were when their month ended.
 */
export function boardsChangedByAction(after: BoardCounters): string[] {
  return [ALL_TIME_BOARD, after.countsMonth];
}

/** Every board a participant's row counts on: what it takes out of the buckets when it is removed. */
export function boardsOf(p: BoardCounters): string[] {
  return [ALL_TIME_BOARD, p.countsMonth, previousMonthKey(p.countsMonth)];
}
