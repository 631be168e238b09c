import { performance } from 'node:perf_hooks';
import { applyActions, systemClock } from '@stampcard/core';
import { createDb } from '@stampcard/db';
import { appliedCount, queueActions } from '../backlog';
import { type ApplyBaselineResult, applyBaseline } from '../baselines';
import type { Bench } from '../context';
import { settle } from '../settle';
import { percentile, progress, round, until, withHeartbeat } from '../util';

type OneBatch = { size: number; batches: number; meanMs: number; p50Ms: number; p99Ms: number };

export type ApplyFigure = {
  stampcard: {
    actions: number;
    workers: number;
    /** First applied action seen → the campaign's count reaching the total. */
    seconds: number;
    perSecond: number;
    /** Worker processes spawned → first applied action seen (process start, connections, first batch). */
    startupMs: number;
    /** The same rate counted from the spawn, start-up included. */
    perSecondFromSpawn: number;
    /** Ledger rows of the backlog not APPLIED at the end (REJECTED): should be 0. */
    notApplied: number;
  };
  /**
   * One batch of `size` actions of as many participants applied at a time by the worker's own code
   * (`applyActions`, in the bench's process, no queue), `batches` of them after a warm-up: the time one batch's
   * transaction takes, its round trips included, on a machine doing nothing else. No target: it says what a
   * change to the apply transaction bought.
   */
  oneBatch: OneBatch;
  /**
   * The same, behind a backlog of `backlog` QUEUED actions (of other participants) that came after PostgreSQL's
   * statistics were taken, as on a large ledger, which autovacuum analyses only after a tenth of it changes: what
   * each batch pays for a backlog it does not apply. A claim that the planner sends through the index of every
   * QUEUED action reads the backlog each time.
   */
  behindBacklog: OneBatch & { backlog: number };
  /** The best of `sweep`: PostgreSQL's best at this work on this machine. */
  baseline: ApplyBaselineResult;
  /** The baseline at each connection count tried (`settings.apply.baselineConnections`). */
  sweep: ApplyBaselineResult[];
  ratio: number;
};

/**
 * Actions per second one worker process (or `--workers M`) applies from a backlog: the actions are queued
 * while no worker runs (ledger rows in SQL, jobs with `addBulk`), then the workers start and the campaign's
 * `loyaltyActionCount` is polled in PostgreSQL every 25 ms until it reaches the total. Beside it, the same
 * number of one-transaction-per-action writes at each of several connection counts, the best of which is the
 * baseline (not the worker's own pool size: the count at which PostgreSQL does best on this machine).
 */
export async function measureApply(bench: Bench): Promise<ApplyFigure> {
  const { settings, seeded } = bench;
  const n = settings.apply.actions;
  await settle(bench, 'apply');
  const sweep: ApplyBaselineResult[] = [];
  for (const connections of settings.apply.baselineConnections) {
    progress(
      `apply baseline: ${n} transactions (insert ledger row + update counter), postgres.js × ${connections} connections`,
    );
    const result = await withHeartbeat('apply baseline', () =>
      applyBaseline({
        dbUrl: bench.dbUrl,
        campaign: seeded.campaigns.applyBaseline,
        participants: settings.participants,
        actions: n,
        connections,
      }),
    );
    progress(`apply baseline: ${result.perSecond} actions/s at ${connections} connections`);
    sweep.push(result);
    await settle(bench, 'apply');
  }
  const baseline = sweep.reduce((best, r) => (r.perSecond > best.perSecond ? r : best));
  progress(`apply baseline: best ${baseline.perSecond} actions/s, at ${baseline.connections} connections`);

  // Before any worker runs: its relay would take these jobless rows for its own.
  const oneBatch = await measureOneBatch(bench);
  const behindBacklog = await measureBehindBacklog(bench);

  const campaign = seeded.campaigns.apply;
  progress(`apply: queueing ${n} actions (SQL rows + addBulk jobs), no worker running`);
  const before = await appliedCount(bench, campaign.id);
  await queueActions(bench, campaign, n);
  await settle(bench, 'apply');
  progress(`apply: starting ${settings.workers} worker process(es); timing until the campaign counts ${n}`);
  const spawned = performance.now();
  for (let i = 0; i < settings.workers; i++) await bench.services.start('worker');
  let first: { at: number; count: number } | null = null;
  let count = 0;
  let reported = performance.now();
  await until(
    `the worker to apply ${n} actions`,
    Math.max(90_000, n * 10),
    async () => {
      bench.services.assertAlive();
      count = (await appliedCount(bench, campaign.id)) - before;
      const now = performance.now();
      if (!first && count > 0) first = { at: now, count };
      if (now - reported > 10_000) {
        reported = now;
        progress(`apply: ${count} of ${n} applied`);
      }
      return count >= n;
    },
    { everyMs: 25, state: () => `${count} of ${n} applied` },
  );
  const done = performance.now();
  const start = first as { at: number; count: number } | null;
  if (!start) throw new Error('no applied action was seen');
  const seconds = (done - start.at) / 1000;
  const [left] = await bench.sql<{ n: number }[]>`
    select count(*)::int as n from loyalty_actions where campaign_id = ${campaign.id} and status <> 'APPLIED'`;
  // The first poll that saw any applied action saw `start.count` of them: the rate counts the rest.
  const perSecond = round((n - start.count) / seconds);
  progress(`apply: ${perSecond} actions/s (${round(seconds, 2)} s after the first applied)`);
  return {
    oneBatch,
    behindBacklog,
    stampcard: {
      actions: n,
      workers: settings.workers,
      seconds: round(seconds, 2),
      perSecond,
      startupMs: Math.round(start.at - spawned),
      perSecondFromSpawn: round(n / ((done - spawned) / 1000)),
      notApplied: left?.n ?? 0,
    },
    baseline,
    sweep,
    ratio: round(perSecond / baseline.perSecond, 4),
  };
}

/** `ApplyFigure.oneBatch`: batches of 32 ledger rows (no jobs) applied one after another, the first 20 a warm-up. */
async function measureOneBatch(bench: Bench): Promise<OneBatch> {
  await settle(bench, 'apply');
  return timeBatches(bench, 'one batch of 32 at a time');
}

/**
 * `ApplyFigure.behindBacklog`: the statistics taken with nothing QUEUED, then a backlog queued for another
 * campaign's participants (so no batch takes any of it with its own), then `timeBatches`. The backlog is
 * rejected after, so that the worker's relay never sees it.
 */
async function measureBehindBacklog(bench: Bench): Promise<ApplyFigure['behindBacklog']> {
  const backlog = bench.settings.mode === 'quick' ? 10_000 : 50_000;
  await settle(bench, 'apply');
  const other = bench.seeded.campaigns.applyBaseline;
  progress(`apply: a backlog of ${backlog} QUEUED actions queued after the statistics were taken`);
  await queueActions(bench, other, backlog, undefined, false);
  try {
    return { backlog, ...(await timeBatches(bench, `one batch of 32 behind a backlog of ${backlog}`)) };
  } finally {
    await bench.sql`
      update loyalty_actions set status = 'REJECTED', reason = 'BENCH_BACKLOG'
      where campaign_id = ${other.id} and status = 'QUEUED'`;
  }
}

/** Batches of 32 new ledger rows (no jobs) applied one after another by `applyActions`, the first 20 a warm-up. */
async function timeBatches(bench: Bench, what: string): Promise<OneBatch> {
  const size = 32;
  const warm = 20;
  const batches = bench.settings.mode === 'quick' ? 100 : 300;
  progress(`apply: ${what}, ${batches} batches after ${warm}, in the bench's process`);
  const ids = await queueActions(
    bench,
    bench.seeded.campaigns.apply,
    size * (warm + batches),
    undefined,
    false,
  );
  const handle = createDb(bench.dbUrl, { max: 1 });
  const times: number[] = [];
  try {
    const ctx = { db: handle.db, clock: systemClock };
    for (let b = 0; b < warm + batches; b++) {
      const batch = ids.slice(b * size, (b + 1) * size);
      const t0 = performance.now();
      const applied = await applyActions(ctx, batch);
      if (b >= warm) times.push(performance.now() - t0);
      if (applied.length !== size) throw new Error(`${what}: ${applied.length} of ${size} applied`);
    }
  } finally {
    await handle.close();
  }
  times.sort((a, b) => a - b);
  const meanMs = round(times.reduce((a, b) => a + b, 0) / times.length, 2);
  const p50Ms = round(percentile(times, 50)!, 2);
  const p99Ms = round(percentile(times, 99)!, 2);
  progress(`apply: ${what}: mean ${meanMs} ms, p50 ${p50Ms} ms, p99 ${p99Ms} ms`);
  return { size, batches, meanMs, p50Ms, p99Ms };
}
