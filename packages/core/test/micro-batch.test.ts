import { describe, expect, it } from 'vitest';
import type { CommitState } from '../src/context';
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

  it('with retryAlone, a failed batch runs each item again alone: only the item at fault fails, with its own error', async () => {
    const runs: number[][] = [];
    const batchErrors: [string, number][] = [];
    const b = microBatch<number, number>({
      retryAlone: true,
      onBatchError: (error, size) => batchErrors.push([(error as Error).message, size]),
      run: async (items) => {
        runs.push(items);
        if (items.includes(2)) throw new Error(`bad ${items.join(',')}`);
        return items.map((i) => i * 10);
      },
    });
    const settled = await Promise.allSettled([1, 2, 3].map((i) => b.submit(i)));
    expect(settled).toEqual([
      { status: 'fulfilled', value: 10 },
      { status: 'rejected', reason: new Error('bad 2') },
      { status: 'fulfilled', value: 30 },
    ]);
    expect(runs).toEqual([[1, 2, 3], [1], [2], [3]]);
    expect(batchErrors).toEqual([['bad 1,2,3', 3]]);
    // A batch of one is its own retry: it fails at once.
    await expect(b.submit(2)).rejects.toThrow('bad 2');
    expect(runs.at(-1)).toEqual([2]);
    expect(batchErrors).toHaveLength(1);
  });

  it('drain runs what is pending and waits for every batch under way', async () => {
    const done: number[] = [];
    const b = microBatch<number, number>({
      maxSize: 2,
      maxInFlight: 1,
      maxWaitMs: 60_000,
      run: async (items) => {
        await new Promise((r) => setTimeout(r, 5));
        done.push(...items);
        return items;
      },
    });
    const submitted = [1, 2, 3].map((i) => b.submit(i));
    await b.drain();
    expect(done).toEqual([1, 2, 3]);
    expect(await Promise.all(submitted)).toEqual([1, 2, 3]);
  });

  it('as a group commit: drops, unsent, the items of callers that stopped waiting, and tells the others when their write is in flight and how it ended', async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => {
      release = r;
    });
    const sent: number[][] = [];
    const b = microBatch<number, number | null>({
      maxInFlight: 1,
      landed: (r) => r !== null,
      run: async (items) => {
        sent.push(items);
        if (items.includes(1)) await held;
        return items.map((i) => (i === 3 ? null : i));
      },
    });
    const caller = () => ({ signal: new AbortController(), commit: { sent: 0 } as CommitState });
    const [c1, c2, c3, c4] = [caller(), caller(), caller(), caller()];
    const by = (c: ReturnType<typeof caller>) => ({ signal: c.signal.signal, commit: c.commit });
    const first = b.submit(1, by(c1));
    await new Promise((r) => setTimeout(r, 5));
    expect(c1.commit.sent).toBe(1);
    // These queue behind the held batch; the second caller gives up meanwhile.
    const rest = [b.submit(2, by(c2)), b.submit(3, by(c3)), b.submit(4, by(c4))];
    await new Promise((r) => setTimeout(r, 5));
    c2.signal.abort();
    expect(c2.commit.sent).toBe(0);
    release();
    expect(await first).toBe(1);
    const settled = await Promise.allSettled(rest);
    expect(settled[0]).toMatchObject({ status: 'rejected', reason: { code: 'UNAVAILABLE' } });
    expect(settled.slice(1)).toEqual([
      { status: 'fulfilled', value: null },
      { status: 'fulfilled', value: 4 },
    ]);
    expect(sent).toEqual([[1], [3, 4]]);
    expect([c1, c2, c3, c4].map((c) => [c.commit.sent, c.commit.outcome])).toEqual([
      [0, 'LANDED'],
      [0, undefined],
      [0, undefined],
      [0, 'LANDED'],
    ]);
  });

  it('as a group commit whose connection is lost: each caller is told the outcome is unknown, naming its write', async () => {
    const b = microBatch<string, string>({
      landed: () => true,
      run: async () => {
        throw Object.assign(new Error('write CONNECTION_CLOSED'), { code: 'CONNECTION_CLOSED' });
      },
    });
    const commit: CommitState = { sent: 0 };
    const err = await b.submit('x', { commit, subject: { actionId: 'act_1' } }).catch((e) => e);
    expect(err).toMatchObject({ code: 'UNAVAILABLE', details: { outcome: 'UNKNOWN', actionId: 'act_1' } });
    expect(commit).toMatchObject({ sent: 0, outcome: 'UNKNOWN' });
  });
});
