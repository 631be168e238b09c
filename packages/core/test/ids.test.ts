import { describe, expect, it } from 'vitest';
import { compareIds, newActionId, newApiKey, newId } from '../src/ids';

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

describe('random ids', () => {
  it('stay distinct, well formed and evenly spread across many refills of their random pool', () => {
    // 3,100 ids of 20 symbols: some 75,000 random bytes, the 4 KiB pool refilled about 18 times.
    const ids = Array.from({ length: 3100 }, () => newId('reward'));
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids) expect(id).toMatch(/^crew_[0-9A-Za-z]{20}$/);
    // 62,000 symbols of 62: 1,000 each expected (standard deviation about 31).
    const counts = new Map<string, number>();
    for (const id of ids) for (const ch of id.slice(5)) counts.set(ch, (counts.get(ch) ?? 0) + 1);
    expect(counts.size).toBe(62);
    for (const n of counts.values()) {
      expect(n).toBeGreaterThan(850);
      expect(n).toBeLessThan(1150);
    }
  });

  it('gives a secret key of its own bytes, with the stored hash and the shown prefix', () => {
    const a = newApiKey();
    const b = newApiKey();
    expect(a.key).toMatch(/^sk_[0-9A-Za-z]{40}$/);
    expect(a.key).not.toBe(b.key);
    expect(a.prefix).toBe(a.key.slice(0, 9));
    expect(a.hash).toMatch(/^[0-9a-f]{64}$/);
  });
});
