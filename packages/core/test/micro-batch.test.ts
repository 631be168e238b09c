import { describe, expect, it } from 'vitest';
import { microBatch } from '../src/micro-batch';

describe('microBatch', () => {
  it('runs items submitted together as one batch, each caller getting its own result', async () => {
    const batches: number[][] = [];
    const b = microBatch<number, number>({
      maxWaitMs: 5,
      run: async (items) => {
        batches.push(items);
        return items.map((i) => i * 10);
      },
    });
    expect(await Promise.all([1, 2, 3].map((i) => b.submit(i)))).toEqual([10, 20, 30]);
    expect(batches).toEqual([[1, 2, 3]]);
  });

  it('splits at maxSize, keeps at most maxInFlight batches running, and fails only the failing batch', async () => {
    let running = 0;
    let most = 0;
    const b = microBatch<number, number>({
      maxSize: 2,
      maxInFlight: 1,
      run: async (items) => {
        running += 1;
        most = Math.max(most, running);
        await new Promise((r) => setTimeout(r, 5));
        running -= 1;
        if (items.includes(3)) throw new Error('bad batch');
        return items;
      },
    });
    const results = await Promise.allSettled([1, 2, 3, 4, 5].map((i) => b.submit(i)));
    expect(results.map((r) => r.status)).toEqual([
      'fulfilled',
      'fulfilled',
      'rejected',
      'rejected',
      'fulfilled',
    ]);
    expect(most).toBe(1);
  });
});
