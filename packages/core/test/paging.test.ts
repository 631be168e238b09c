import { describe, expect, it } from 'vitest';
import { itemsWithinBudget, jsonBytesAtMost, PAGE_BUDGET_BYTES } from '../src/paging';

const bytes = (v: unknown) => Buffer.byteLength(JSON.stringify(v));

describe('jsonBytesAtMost', () => {
  it('is never below the real size, whatever the characters', () => {
    const values: unknown[] = [
      '',
      'plain',
      '\u0001\u001f"\\\n',
      'Zürich 東京 😀',
      '\ud800 lone \udc00',
      -1.7976931348623157e308,
      5e-324,
      2_147_483_647,
      true,
      null,
      new Date(),
      [undefined, () => 1, 'x', [1, [2, { a: '\u0000' }]]],
      { a: undefined, b: '\u0007'.repeat(100), 'ключ\u0001': { nested: ['😀'.repeat(50)] }, d: new Date(0) },
    ];
    for (const v of values) expect(jsonBytesAtMost(v)).toBeGreaterThanOrEqual(bytes(v));
  });
});

describe('itemsWithinBudget', () => {
  const item = (n: number) => ({ text: 'x'.repeat(n) });

  it('keeps every item of a page whose bound fits', () => {
    expect(itemsWithinBudget([item(100), item(100), item(100)])).toBe(3);
    expect(itemsWithinBudget([])).toBe(0);
  });

  it('stops before the item that would pass the budget, measured exactly', () => {
    // Each item is about 100 KB of ASCII: a bound of six bytes a character would cut after one.
    const items = Array.from({ length: 20 }, () => item(100_000));
    const n = itemsWithinBudget(items);
    const carried = bytes(items.slice(0, n));
    expect(carried).toBeLessThanOrEqual(PAGE_BUDGET_BYTES);
    expect(carried + bytes(items[n]) + 1).toBeGreaterThan(PAGE_BUDGET_BYTES - 1024);
    expect(n).toBe(10);
  });

  it('always carries one item, however large, so paging moves on', () => {
    expect(itemsWithinBudget([item(2 * PAGE_BUDGET_BYTES), item(10)])).toBe(1);
    expect(itemsWithinBudget([item(10), item(2 * PAGE_BUDGET_BYTES)])).toBe(1);
    expect(itemsWithinBudget([item(500)], 100)).toBe(1);
  });
});
