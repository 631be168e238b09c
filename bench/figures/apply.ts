import { performance } from 'node:perf_hooks';
import { appliedCount, queueActions } from '../backlog';
import { type ApplyBaselineResult, applyBaseline } from '../baselines';
import type { Bench } from '../context';
import { settle } from '../settle';
import { progress, round, until, withHeartbeat } from '../util';

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
