import { performance } from 'node:perf_hooks';
import type { Bench } from './context';
import { progress, round, within } from './util';

/**
 * Before each measured run: the previous runs' dead rows vacuumed and statistics refreshed (VACUUM ANALYZE of
 * the bench database), then a CHECKPOINT, so that neither an autovacuum nor a checkpoint caused by an earlier
 * run lands inside the next one. Memory samples from here on are filed under `phase`.
 */
export async function settle(bench: Bench, phase: string): Promise<void> {
  await bench.services.enterPhase(phase);
  const started = performance.now();
  await within('VACUUM ANALYZE', 120_000, bench.sql.unsafe('vacuum (analyze)'));
  // CHECKPOINT needs a superuser or pg_checkpoint; without it only the vacuum is done.
  await within('CHECKPOINT', 60_000, bench.sql.unsafe('checkpoint')).catch(() => {});
  const ms = performance.now() - started;
  if (ms > 1000) progress(`settle before ${phase}: vacuum + checkpoint took ${round(ms / 1000, 1)} s`);
}
