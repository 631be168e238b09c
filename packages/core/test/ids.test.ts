import { describe, expect, it } from 'vitest';
import { compareIds, newActionId } from '../src/ids';

describe('newActionId', () => {
  it('has the shape of every id: act_ and 20 characters of [0-9A-Za-z]', () => {
    expect(newActionId(new Date())).toMatch(/^act_[0-9A-Za-z]{20}$/);
  });

  it('grows within a millisecond, by character codes, in the order the ids were made', () => {
    const at = new Date('2026-11-27T10:00:00.000Z');
    const ids = Array.from({ length: 500 }, () => newActionId(at));
    expect([...ids].sort(compareIds)).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('grows from one millisecond to the next, and when the clock steps back', () => {
    const first = newActionId(new Date('2026-11-27T10:00:00.005Z'));
    const later = newActionId(new Date('2026-11-27T10:00:00.006Z'));
    const back = newActionId(new Date('2026-11-27T09:59:59.000Z'));
    expect(compareIds(first, later)).toBe(-1);
    expect(compareIds(later, back)).toBe(-1);
  });
});

describe('compareIds', () => {
  it('orders by character code (as collate "C"), not by locale', () => {
    expect(['b', 'B', 'a', 'A', '0'].sort(compareIds)).toEqual(['0', 'A', 'B', 'a', 'b']);
    expect(compareIds('x', 'x')).toBe(0);
  });
});
