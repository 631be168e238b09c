import { describe, expect, it } from 'vitest';
import { createDb, reconnectBackoff } from '../src/client';

describe('reconnecting after an outage', () => {
  it('a closed connection waits at most reconnectMaxMs before its next attempt, however many attempts failed', () => {
    const wait = reconnectBackoff(1000);
    // postgres.js counts failures across the whole pool: 20 is a few seconds of outage for a pool of 10.
    for (let n = 0; n <= 40; n++) {
      expect(wait(n)).toBeLessThanOrEqual(1);
      expect(wait(n)).toBeGreaterThan(0);
    }
    // The first retries are quick, so a blip costs milliseconds.
    expect(wait(0)).toBeLessThanOrEqual(0.05);
  });

  it('the pool is built with it', () => {
    const handle = createDb('postgres://postgres@127.0.0.1:5432/postgres', { max: 1, reconnectMaxMs: 500 });
    const backoff = (handle.sql.options as unknown as { backoff: (n: number) => number }).backoff;
    expect(backoff(30)).toBeLessThanOrEqual(0.5);
    return handle.close();
  });
});
