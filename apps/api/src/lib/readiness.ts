import { withTimeout } from '@stampcard/core';
import type { Database } from '@stampcard/db';
import type { RedisClient } from '@stampcard/jobs';
import { sql } from 'drizzle-orm';

/** What `/ready` reports: whether each store answered. */
export type Readiness = { postgres: 'ok' | 'down'; redis: 'ok' | 'down' };

export type ReadinessOptions = {
  /**
   * A result is reused by every caller for this long, in ms.
   * @defaultValue 1000
   */
  cacheMs?: number;
  /**
   * Longest a store may take to answer before it counts as down, in ms.
   * @defaultValue 1000
   */
  timeoutMs?: number;
};

/**
 * The store checks of `/ready`, which anyone may call without a key and as often as they like: at most one
 * check is in flight per process, every caller meanwhile shares it, and its result is reused for `cacheMs`.
 * So a flood of `/ready` costs at most one `select 1` and one `PING` a second, never the API's pool. A check
 * that does not answer within `timeoutMs` counts as down (its statement ends at the statement timeout).
 */
export function createReadiness(
  stores: { db: Database; redis: RedisClient },
  opts: ReadinessOptions = {},
): () => Promise<Readiness> {
  const cacheMs = opts.cacheMs ?? 1000;
  const timeoutMs = opts.timeoutMs ?? 1000;
  let last: { at: number; value: Readiness } | null = null;
  let inFlight: Promise<Readiness> | null = null;

  async function check(): Promise<Readiness> {
    const [pg, redis] = await Promise.allSettled([
      withTimeout(stores.db.execute(sql`select 1`), timeoutMs),
      withTimeout(stores.redis.ping(), timeoutMs),
    ]);
    return {
      postgres: pg.status === 'fulfilled' ? 'ok' : 'down',
      redis: redis.status === 'fulfilled' ? 'ok' : 'down',
    };
  }

  return () => {
    if (last && performance.now() - last.at < cacheMs) return Promise.resolve(last.value);
    inFlight ??= check().then((value) => {
      last = { at: performance.now(), value };
      inFlight = null;
      return value;
    });
    return inFlight;
  };
}
