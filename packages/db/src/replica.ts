import { type CreateDbOptions, createDb, type Database, type DbHandle } from './client';

export type ReplicaOptions = CreateDbOptions & {
  /**
   * The most a replica may lag behind the primary, in ms, for reads to go to it; past it (or while it does not
   * answer) they go to the primary.
   * @defaultValue 5000
   */
  maxLagMs?: number;
  /**
   * How often the replica's lag is measured, in ms. A measure older than three of these (a replica that stopped
   * answering) counts as none.
   * @defaultValue 1000
   */
  checkEveryMs?: number;
  /** Told each time the replica goes out of use or back into it (a log line). */
  onChange?: (inUse: boolean, lagMs: number | null, err?: unknown) => void;
};

export type Replica = DbHandle & {
  /** The replica's pool while its last measure is fresh and within `maxLagMs`; otherwise none: read the primary. */
  current(): Database | undefined;
  /** The last measured lag in ms (0 when caught up), or null when the replica did not answer. */
  lagMs(): number | null;
};

/**
 * How far a standby is behind, in ms: 0 when it has replayed all it received (or is not a standby at all), else
 * the age of the last transaction it replayed. An idle primary sends nothing, so "replayed all it received" is
 * what tells a caught-up standby from one that is behind.
 */
const LAG = `select case
  when not pg_is_in_recovery() or pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() then 0
  else coalesce(extract(epoch from clock_timestamp() - pg_last_xact_replay_timestamp()) * 1000, 0)
end::float8 as lag_ms`;

/**
 * A pool on a read replica (`DATABASE_READ_URL`) and a measure of its lag, taken every `checkEveryMs` on one of
 * its connections. Reads that tolerate lag ask `current()` per request: a plain comparison, no round trip.
 */
export function createReplica(url: string, opts: ReplicaOptions = {}): Replica {
  const maxLagMs = opts.maxLagMs ?? 5000;
  const every = opts.checkEveryMs ?? 1000;
  const handle = createDb(url, { ...opts, max: opts.max ?? 5 });
  let lag: number | null = null;
  let measuredAt = 0;
  let inUse = false;
  let closed = false;
  const usable = () => lag !== null && lag <= maxLagMs && Date.now() - measuredAt <= 3 * every;
  const settle = (err?: unknown) => {
    const now = usable();
    if (now !== inUse) {
      inUse = now;
      opts.onChange?.(now, lag, err);
    }
  };
  const measure = async () => {
    try {
      const [row] = await handle.sql.unsafe<{ lag_ms: number }[]>(LAG);
      lag = row?.lag_ms ?? null;
      measuredAt = Date.now();
      settle();
    } catch (err) {
      lag = null;
      settle(err);
    }
  };
  let running: Promise<void> | null = null;
  const timer = setInterval(() => {
    // One measure at a time: a replica that hangs is seen as stale by `current()` meanwhile.
    if (closed || running) return;
    running = measure().finally(() => {
      running = null;
    });
  }, every);
  timer.unref();
  running = measure().finally(() => {
    running = null;
  });
  return {
    ...handle,
    current: () => {
      if (usable()) return handle.db;
      settle();
      return undefined;
    },
    lagMs: () => lag,
    close: async () => {
      closed = true;
      clearInterval(timer);
      await handle.close();
    },
  };
}
