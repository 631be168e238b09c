import { ingestBaseline, serialFloor } from '../baselines';
import type { Bench } from '../context';
import {
  type ClosedLoopResult,
  closedLoop,
  type HammerOptions,
  type HammerResult,
  hammer,
  LOAD_GENERATOR,
} from '../load';
import { triggerRequest } from '../seed';
import { settle } from '../settle';
import { progress, round, withHeartbeat } from '../util';

export type IngestFigure = {
  stampcard: HammerResult;
  baseline: HammerResult;
  /** Stampcard's accepted actions/s ÷ the bare server's answers/s. */
  ratio: number;
  /** One caller sending one action at a time: its latencies, and each stage's from `Server-Timing`. */
  serial: ClosedLoopResult;
  /**
   * The same one caller against a bare server that runs one Redis script and commits one row per request
   * (`serialFloor`): this machine's round trips, the least the serial figure could be.
   */
  serialFloor: ClosedLoopResult;
  /** The stages again with `connections` callers at once (an undici closed loop beside wrk's figure). */
  loaded: ClosedLoopResult;
  /** Actions the ingest run left QUEUED, set aside before the apply figure (queue drained, rows REJECTED). */
  setAside: number;
  /** Requests the warm-up sent before the measured runs. */
  warmupRequests: number;
};

/** Bodies of the serial and loaded runs start here, past any the throughput runs sent. */
const SERIAL_FIRST = 2_000_000_000;
const LOADED_FIRST = 3_000_000_000;
const FLOOR_FIRST = 4_000_000_000;

/**
 * Accepted actions per second at the most the API takes: the load generator (`LOAD_GENERATOR`: wrk where it
 * is installed), `connections` keep-alive connections for a fixed duration after a warm-up, every body
 * distinct (participant n mod 10,000, metadata `{ n }`), against the API processes alone (no worker or
 * dispatcher running yet). Beside it, the same run against a bare `@hono/node-server` answering a fixed JSON.
 * Then the latency one caller sees sending one action at a time (`serial`), beside the same caller against
 * a bare server that makes the accept's two round trips and nothing else (`serialFloor`), and where a request's
 * time goes, stage by stage, alone and under load (`Server-Timing`).
 */
export async function measureIngest(bench: Bench): Promise<IngestFigure> {
  const { settings, seeded } = bench;
  const campaign = seeded.campaigns.ingest;
  const load: Omit<HammerOptions, 'urls'> = {
    connections: settings.ingest.connections,
    durationS: settings.ingest.durationS,
    method: 'POST',
    ...triggerRequest(seeded.apiKey, campaign, settings.participants),
  };
  const what = `${LOAD_GENERATOR} ${settings.ingest.connections} connections, ${settings.ingest.warmupS} s warm-up + ${settings.ingest.durationS} s`;
  await settle(bench, 'ingest');
  progress(`ingest baseline: bare @hono/node-server × ${settings.apiProcesses}, ${what}`);
  const baseline = await withHeartbeat('ingest baseline', () =>
    ingestBaseline(settings.apiProcesses, load, settings.ingest.warmupS),
  );
  progress(`ingest baseline: ${baseline.okPerSecond} answers/s, p50 ${baseline.latencyMs.p50} ms`);

  progress(`ingest: Stampcard API × ${settings.apiProcesses}, ${what}`);
  // The warm-up's bodies use numbers the measured run does not, so no body is ever sent twice.
  const warmup = await hammer({
    ...load,
    urls: bench.apiUrls,
    durationS: settings.ingest.warmupS,
    first: 1_000_000_000,
  });
  bench.services.assertAlive();
  // One caller first, on the warmed-up API with no backlog behind it.
  const timed = { url: bench.apiUrls[0]!, path: load.path, headers: load.headers, body: load.body };
  await settle(bench, 'ingest');
  const serial = await withHeartbeat('ingest serial', () =>
    closedLoop({ ...timed, connections: 1, requests: settings.ingest.serialRequests, first: SERIAL_FIRST }),
  );
  progress(
    `ingest serial: one caller, ${serial.requests} actions one at a time: p50 ${serial.latencyMs.p50} ms p99 ${serial.latencyMs.p99} ms`,
  );
  await settle(bench, 'ingest');
  const floor = await withHeartbeat('ingest serial floor', () =>
    serialFloor({
      dbUrl: bench.dbUrl,
      redisUrl: bench.redisUrl,
      loop: {
        path: load.path,
        headers: load.headers,
        body: load.body,
        requests: settings.ingest.serialRequests,
        first: FLOOR_FIRST,
      },
    }),
  );
  progress(
    `ingest serial floor: one caller against a bare server (one Redis script, one committed row): p50 ${floor.latencyMs.p50} ms p99 ${floor.latencyMs.p99} ms`,
  );
  await settle(bench, 'ingest');
  const stampcard = await withHeartbeat('ingest', () => hammer({ ...load, urls: bench.apiUrls }));
  bench.services.assertAlive();
  progress(
    `ingest: ${stampcard.okPerSecond} accepted/s (${stampcard.non2xx} non-2xx, ${stampcard.errors} errors), p50 ${stampcard.latencyMs.p50} ms p99 ${stampcard.latencyMs.p99} ms`,
  );

  await settle(bench, 'ingest');
  const loaded = await withHeartbeat('ingest stages', () =>
    closedLoop({
      ...timed,
      connections: settings.ingest.connections,
      requests: settings.ingest.serialRequests * 5,
      first: LOADED_FIRST,
    }),
  );
  progress(
    `ingest stages: ${loaded.connections} callers (undici): p50 ${loaded.latencyMs.p50} ms p99 ${loaded.latencyMs.p99} ms, ${loaded.stages.map((st) => `${st.stage} ${st.mean}`).join(', ')}`,
  );

  // The backlog this left is not part of any later figure: drop its jobs, and mark its rows so the relay
  // never queues them again.
  // (The API queues its actions in batch jobs, every shard of them; the relay's single jobs too.)
  for (const queue of [
    ...bench.queues.shardsOf('loyalty-action-batch.apply'),
    ...bench.queues.shardsOf('loyalty-action.apply'),
  ]) {
    await queue.drain(true);
  }
  const setAside = await bench.sql`
    update loyalty_actions set status = 'REJECTED', reason = 'BENCH_SET_ASIDE'
    where campaign_id = ${campaign.id} and status = 'QUEUED'`;
  return {
    stampcard,
    baseline,
    ratio: round(stampcard.okPerSecond / baseline.okPerSecond, 4),
    serial,
    serialFloor: floor,
    loaded,
    setAside: setAside.count,
    warmupRequests: warmup.requests,
  };
}
