import { describe, expect, it } from 'vitest';
import { type Figures, targetsMet } from '../bench/report';
import { e2eRate } from '../bench/settings';

describe("npm run bench's end-to-end rate (BENCH_E2E_RATE)", () => {
  it('is 1,000 actions a second unless set, and the whole number it is set to', () => {
    expect(e2eRate(undefined)).toBe(1_000);
    expect(e2eRate('')).toBe(1_000);
    expect(e2eRate('400')).toBe(400);
  });

  it('refuses what is not a whole number of actions a second from 1 to 20,000, with a short excerpt', () => {
    for (const raw of ['0', '-5', '2.5', 'fast', '20001', '1e9']) {
      expect(() => e2eRate(raw)).toThrow(/BENCH_E2E_RATE must be a whole number/);
    }
    expect(() => e2eRate('x'.repeat(500))).toThrow(/"x{20}"$/);
  });
});

describe("npm run bench's end-to-end target", () => {
  const run = (rate: number, p99: number) =>
    ({ e2e: { load: { rate }, latencyMs: { p50: p99 / 2, p99 }, missing: 0 } }) as unknown as Figures;

  it('is judged at 1,000 actions a second, and is neither met nor missed at another rate', () => {
    expect(targetsMet(run(1_000, 80)).e2e).toBe(true);
    expect(targetsMet(run(1_000, 120)).e2e).toBe(false);
    expect(targetsMet(run(400, 80)).e2e).toBeNull();
  });
});
