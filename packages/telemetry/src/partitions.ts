import { Gauge, type Registry } from 'prom-client';

/** One partitioned table as its metrics read it. */
export type PartitionReading = {
  table: string;
  /** Partitions it has (the default one left out). */
  partitions: number;
  /** The end of its newest partition, UTC ms; null: none. */
  madeUntil: number | null;
  /** Partitions past retention still there (the worker drops them on its next run). */
  overdue: number;
  /** Rows in its default partition: their period had no partition yet. */
  waiting: number;
};

/**
 * The partitioned tables' upkeep, read when scraped (at most once a minute): `stampcard_partitions{table}`,
 * `stampcard_partitions_ahead_seconds{table}` (how far past now partitions are made: below a day, the
 * worker's maintenance has not run for weeks), `stampcard_partitions_overdue{table}` and
 * `stampcard_partition_default_rows{table}` (both 0 when all is well), and `stampcard_database_size_bytes`.
 */
export function partitionMetrics(
  registry: Registry,
  read: () => Promise<{ tables: PartitionReading[]; databaseBytes: number }>,
  opts: { cacheMs?: number; now?: () => number } = {},
) {
  const cacheMs = opts.cacheMs ?? 60_000;
  const now = opts.now ?? Date.now;
  let readAt = Number.NEGATIVE_INFINITY;
  let reading: Promise<void> | null = null;
  const collect = async () => {
    if (performance.now() - readAt < cacheMs) return;
    reading ??= read()
      .then(({ tables, databaseBytes }) => {
        database.set(databaseBytes);
        for (const t of tables) {
          count.set({ table: t.table }, t.partitions);
          ahead.set({ table: t.table }, t.madeUntil === null ? 0 : Math.max(0, t.madeUntil - now()) / 1000);
          overdue.set({ table: t.table }, t.overdue);
          waiting.set({ table: t.table }, t.waiting);
        }
        readAt = performance.now();
      })
      .catch(() => {})
      .finally(() => {
        reading = null;
      });
    await reading;
  };
  const gauge = (name: string, help: string) =>
    new Gauge({ name, help, labelNames: ['table'] as const, registers: [registry], collect });
  const count = gauge(
    'stampcard_partitions',
    'Partitions of each partitioned table (its default one left out)',
  );
  const ahead = gauge(
    'stampcard_partitions_ahead_seconds',
    'How far past now the partitions of each table are made, in seconds (two periods normally)',
  );
  const overdue = gauge(
    'stampcard_partitions_overdue',
    'Partitions past retention not dropped yet (the next maintenance run drops them)',
  );
  const database = new Gauge({
    name: 'stampcard_database_size_bytes',
    help: "The PostgreSQL database's size on disk, in bytes",
    registers: [registry],
    collect,
  });
  const waiting = gauge(
    'stampcard_partition_default_rows',
    'Rows in the default partition of each table (counted up to 100,000): their period had no partition yet',
  );
}
