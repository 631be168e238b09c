import { Counter, Gauge, type Registry } from 'prom-client';

/**
 * A postgres.js pool's state, as the driver keeps it (exposed by the project's patch of `postgres`, see
 * patches/): connections by state and the queries waiting for one.
 */
export type PoolStats = {
  max: number;
  open: number;
  busy: number;
  full: number;
  reserved: number;
  connecting: number;
  closed: number;
  waiting: number;
  waits: number;
};

/**
 * Pool use and waits of each of the process's PostgreSQL pools, read when scraped:
 * `stampcard_db_client_connections{pool,state}` (`idle`, `used`: running queries, `reserved`: inside a
 * transaction, `connecting`; closed slots are the rest of `..._max`), `stampcard_db_client_connections_max`,
 * `stampcard_db_client_pending_requests` (queries waiting for a connection now) and
 * `stampcard_db_client_waits_total` (queries that found every connection taken, since the process started).
 */
export function poolMetrics(registry: Registry, pools: readonly { name: string; stats: () => PoolStats }[]) {
  new Gauge({
    name: 'stampcard_db_client_connections',
    help: 'Connections of a PostgreSQL pool by state: idle, used (running queries), reserved (in a transaction), connecting',
    labelNames: ['pool', 'state'] as const,
    registers: [registry],
    collect() {
      for (const p of pools) {
        const s = p.stats();
        this.set({ pool: p.name, state: 'idle' }, s.open);
        this.set({ pool: p.name, state: 'used' }, s.busy + s.full);
        this.set({ pool: p.name, state: 'reserved' }, s.reserved);
        this.set({ pool: p.name, state: 'connecting' }, s.connecting);
      }
    },
  });
  new Gauge({
    name: 'stampcard_db_client_connections_max',
    help: 'Most connections a PostgreSQL pool opens',
    labelNames: ['pool'] as const,
    registers: [registry],
    collect() {
      for (const p of pools) this.set({ pool: p.name }, p.stats().max);
    },
  });
  new Gauge({
    name: 'stampcard_db_client_pending_requests',
    help: 'Queries waiting for a connection of a PostgreSQL pool, now',
    labelNames: ['pool'] as const,
    registers: [registry],
    collect() {
      for (const p of pools) this.set({ pool: p.name }, p.stats().waiting);
    },
  });
  new Counter({
    name: 'stampcard_db_client_waits_total',
    help: 'Queries that found every connection of a PostgreSQL pool taken and waited for one',
    labelNames: ['pool'] as const,
    registers: [registry],
    collect() {
      // The driver keeps the count: the counter shows it as it is.
      this.reset();
      for (const p of pools) this.inc({ pool: p.name }, p.stats().waits);
    },
  });
}

/** What the replica metrics read: the replica's last measured lag and whether reads go to it. */
export type ReplicaReading = { lagMs(): number | null; current(): unknown };

/**
 * The read replica's state, read when scraped: `stampcard_db_replica_lag_seconds` (its last measured lag; NaN
 * while it does not answer) and `stampcard_db_replica_in_use` (1 while reads go to it, 0 while they go to the
 * primary: lag past `DATABASE_READ_MAX_LAG_MS`, or no answer).
 */
export function replicaMetrics(registry: Registry, replica: ReplicaReading) {
  new Gauge({
    name: 'stampcard_db_replica_lag_seconds',
    help: 'How far the read replica was behind the primary when last measured (NaN while it does not answer)',
    registers: [registry],
    collect() {
      const lag = replica.lagMs();
      this.set(lag === null ? Number.NaN : lag / 1000);
    },
  });
  new Gauge({
    name: 'stampcard_db_replica_in_use',
    help: 'Whether lag-tolerant reads go to the read replica (1) or to the primary (0)',
    registers: [registry],
    collect() {
      this.set(replica.current() === undefined ? 0 : 1);
    },
  });
}
