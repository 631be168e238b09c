import { describe, expect, it } from 'vitest';
import {
  type BoardCounters,
  boardOf,
  boardsChangedByAction,
  boardsOf,
  bucketMoves,
  countAction,
} from '../src/index';
import { bucketChanges } from '../src/services/leaderboard/buckets';

const row = (over: Partial<BoardCounters> = {}) => ({
  loyaltyActionCount: 0,
  countsMonth: '2026-03',
  monthlyLoyaltyActionCount: 0,
  prevMonthlyLoyaltyActionCount: 0,
  monthlyLoyaltyActionCountsPerReward: {},
  loyaltyActionCountsPerReward: {},
  ...over,
});

/** The moves one action in `month` makes, as the worker computes them. */
function afterOneAction(before: ReturnType<typeof row>, month: string) {
  const after = { ...before, ...countAction(before, 'crew_1', month).counters };
  return bucketMoves(before, after, boardsChangedByAction(after));
}

describe('leaderboard boards and buckets', () => {
  it('names the board each leaderboard reads', () => {
    expect(boardOf('ALL_TIME', '2026-01')).toBe('ALL');
    expect(boardOf('CURRENT_MONTH', '2026-01')).toBe('2026-01');
    expect(boardOf('PREV_MONTH', '2026-01')).toBe('2025-12');
  });

  it('moves a first action into the buckets of 1, all-time and this month', () => {
    expect(afterOneAction(row(), '2026-03')).toEqual([
      { board: 'ALL', score: 1, delta: 1 },
      { board: '2026-03', score: 1, delta: 1 },
    ]);
  });

  it('moves a later action from the old count to the new one', () => {
    const before = row({ loyaltyActionCount: 5, monthlyLoyaltyActionCount: 2 });
    expect(afterOneAction(before, '2026-03')).toEqual([
      { board: 'ALL', score: 5, delta: -1 },
      { board: 'ALL', score: 6, delta: 1 },
      { board: '2026-03', score: 2, delta: -1 },
      { board: '2026-03', score: 3, delta: 1 },
    ]);
  });

  it("leaves last month's board as it was when the row rolls into a new month", () => {
    const before = row({
      loyaltyActionCount: 5,
      monthlyLoyaltyActionCount: 4,
      prevMonthlyLoyaltyActionCount: 1,
    });
    // April: March's 4 moves to prev… (still 4 on March's board), April starts at 1; February's board untouched.
    expect(afterOneAction(before, '2026-04')).toEqual([
      { board: 'ALL', score: 5, delta: -1 },
      { board: 'ALL', score: 6, delta: 1 },
      { board: '2026-04', score: 1, delta: 1 },
    ]);
    // A month skipped: the same.
    expect(afterOneAction(before, '2026-06')).toEqual([
      { board: 'ALL', score: 5, delta: -1 },
      { board: 'ALL', score: 6, delta: 1 },
      { board: '2026-06', score: 1, delta: 1 },
    ]);
  });

  it('takes a removed participant out of every bucket its row remembers', () => {
    const gone = row({
      loyaltyActionCount: 7,
      monthlyLoyaltyActionCount: 2,
      prevMonthlyLoyaltyActionCount: 3,
    });
    expect(bucketMoves(gone, null, boardsOf(gone))).toEqual([
      { board: 'ALL', score: 7, delta: -1 },
      { board: '2026-03', score: 2, delta: -1 },
      { board: '2026-02', score: 3, delta: -1 },
    ]);
    expect(bucketMoves(row(), null, boardsOf(row()))).toEqual([]);
  });

  it('sums the moves of a batch per bucket, drops those that cancel, sorts them in lock order', () => {
    expect(
      bucketChanges([
        { campaignId: 'b', moves: [{ board: 'ALL', score: 2, delta: 1 }] },
        {
          campaignId: 'a',
          moves: [
            { board: 'ALL', score: 2, delta: -1 },
            { board: 'ALL', score: 3, delta: 1 },
          ],
        },
        {
          campaignId: 'a',
          moves: [
            { board: 'ALL', score: 1, delta: -1 },
            { board: 'ALL', score: 2, delta: 1 },
          ],
        },
        { campaignId: 'a', moves: [{ board: '2026-03', score: 1, delta: 1 }] },
      ]),
    ).toEqual([
      { campaignId: 'a', board: '2026-03', score: 1, delta: 1 },
      { campaignId: 'a', board: 'ALL', score: 1, delta: -1 },
      { campaignId: 'a', board: 'ALL', score: 3, delta: 1 },
      { campaignId: 'b', board: 'ALL', score: 2, delta: 1 },
    ]);
  });
});
