import { ingestBaseline } from '../baselines';
import type { Bench } from '../context';
import { type HammerOptions, type HammerResult, hammer } from '../load';
import { triggerRequest } from '../seed';
import { settle } from '../settle';
import { progress, round, withHeartbeat } from '../util';

export type IngestFigure = {
  stampcard: HammerResult;
  baseline: HammerResult;
  /** Stampcard's accepted actions/s ÷ the bare server's answers/s. */
  ratio: number;
  /** Actions the ingest run left QUEUED, set aside before the apply figure (queue drained, rows REJECTED). */
  setAside: number;
};

/**
 * Accepted actions per second at the most the API takes: autocannon, `connections` keep-alive connections
 * for a fixed duration after a warm-up, every body distinct (participant n mod 10,000, metadata `{ n }`),
 * against the API processes alone (no worker or dispatcher running yet). Beside it, the same autocannon run
 * against a bare `@hono/node-server` answering a fixed JSON.
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
  const what = `${settings.ingest.connections} connections, ${settings.ingest.warmupS} s warm-up + ${settings.ingest.durationS} s`;
  await settle(bench, 'ingest');
  progress(`ingest baseline: bare @hono/node-server × ${settings.apiProcesses}, autocannon ${what}`);
  const baseline = await withHeartbeat('ingest baseline', () =>
    ingestBaseline(settings.apiProcesses, load, settings.ingest.warmupS),
  );
  progress(`ingest baseline: ${baseline.okPerSecond} answers/s, p50 ${baseline.latencyMs.p50} ms`);

  progress(`ingest: Stampcard API × ${settings.apiProcesses}, autocannon ${what}`);
  // The warm-up's bodies use numbers the measured run does not, so no body is ever sent twice.
  await hammer({
    ...load,
    urls: bench.apiUrls,
    durationS: settings.ingest.warmupS,
    body: (n) => load.body(1_000_000_000 + n),
  });
  bench.services.assertAlive();
  await settle(bench, 'ingest');
  const stampcard = await withHeartbeat('ingest', () => hammer({ ...load, urls: bench.apiUrls }));
  bench.services.assertAlive();
  progress(
    `ingest: ${stampcard.okPerSecond} accepted/s (${stampcard.non2xx} non-2xx, ${stampcard.errors} errors), p50 ${stampcard.latencyMs.p50} ms p99 ${stampcard.latencyMs.p99} ms`,
  );

  // The backlog this left is not part of any later figure: drop its jobs, and mark its rows so the relay
  // never queues them again.
  await bench.queues.forJob('loyalty-action.apply').drain(true);
  const setAside = await bench.sql`
    update loyalty_actions set status = 'REJECTED', reason = 'BENCH_SET_ASIDE'
    where campaign_id = ${campaign.id} and status = 'QUEUED'`;
  return {
    stampcard,
    baseline,
    ratio: round(stampcard.okPerSecond / baseline.okPerSecond, 4),
    setAside: setAside.count,
  };
}
