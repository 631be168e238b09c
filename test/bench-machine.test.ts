import { availableParallelism } from 'node:os';
import { describe, expect, it } from 'vitest';
import { machineBusyPercent, machineTicks } from '../bench/service';

describe("the bench's reading of the whole machine", () => {
  it('reads every core from /proc/stat, and a busy stretch between two readings as more than nothing', async () => {
    const before = await machineTicks();
    expect(before).not.toBeNull();
    expect(before!.cores).toBeGreaterThanOrEqual(availableParallelism());
    expect(before!.busy).toBeLessThanOrEqual(before!.total);
    // A quarter of a second of this process's own work: at least that share of one core is busy meanwhile.
    const until = performance.now() + 250;
    while (performance.now() < until) Math.sqrt(Math.random());
    const after = await machineTicks();
    const busy = machineBusyPercent(before, after);
    expect(busy).toBeGreaterThanOrEqual(50);
    expect(busy).toBeLessThanOrEqual(after!.cores * 100);
  });

  it('says nothing without two readings, or with two of the same moment', () => {
    const reading = { busy: 10, total: 40, cores: 2 };
    expect(machineBusyPercent(null, reading)).toBeNull();
    expect(machineBusyPercent(reading, null)).toBeNull();
    expect(machineBusyPercent(reading, reading)).toBeNull();
    expect(machineBusyPercent(reading, { busy: 40, total: 80, cores: 2 })).toBe(150);
  });
});
