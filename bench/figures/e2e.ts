import { performance } from 'node:perf_hooks';
import { queueActions } from '../backlog';
import type { Bench } from '../context';
import { type PacedResult, paced } from '../load';
import { type BenchCampaign, triggerRequest } from '../seed';
import { machineBusyPercent, machineTicks } from '../service';
import { settle } from '../settle';
import { percentile, progress, round, until, withHeartbeat } from '../util';

export type E2eFigure = {
  load: PacedResult;
  /**
   * How busy the whole machine was while the load was sent, in % of one core, and its cores (`/proc/stat`; null
   * without it): at or near every core's worth, the latencies are those of a machine that cannot keep up.
   */
  machineBusy: { percent: number; cores: number } | null;
  /** Accepted actions whose webhook arrived (the first arrival of each). */
  received: number;
  /** Accepted actions whose webhook had not arrived when the wait ended. */
  missing: number;
  /** Request sent → webhook received, per accepted action. */
  latencyMs: { p50: number | null; p90: number | null; p99: number | null; max: number | null };
  /** True when webhooks were missing: each counted with the time it had waited, so the figures are minimums. */
  lowerBound: boolean;
  /** The same latency in two stages: request sent → applied (ledger applied_at), applied → webhook received. */
  stagesMs: {
    sentToApplied: { p50: number | null; p99: number | null };
    appliedToReceived: { p50: number | null; p99: number | null };
  };
  /**
   * Applied → received taken apart from the rows of each action (every time from this machine's clock):
   * applied → its LOYALTY_ACTION_APPLIED event recorded (inside the apply's transaction), event → its message
   * made (the outbox's hand-off and the fan-out), message made → its first attempt sent (the batch job, its
   * lane, the load, the claim, the window), attempt sent → webhook received (the request).
   */
  deliveryStagesMs: Record<
    'appliedToEvent' | 'eventToMessage' | 'messageToAttempt' | 'attemptToReceived',
    { p50: number | null; p99: number | null }
  >;
  /**
   * Throughput: `actions` queued at once over `participants` participants (several each, so an ordered
   * endpoint sends each participant's one after the other), until every webhook arrived.
   */
  burst: { actions: number; participants: number; seconds: number; perSecond: number; received: number };
};

/** The `p`th percentile of `sorted`, to a tenth of a ms; null when there is none. */
function percentileMs(sorted: number[], p: number): number | null {
  const v = percentile(sorted, p);
  return v === null ? null : round(v, 1);
}

/** The p50 and p99 of `list`, which it sorts. */
function spread(list: number[]): { p50: number | null; p99: number | null } {
  list.sort((a, b) => a - b);
  return { p50: percentileMs(list, 50), p99: percentileMs(list, 99) };
}

/** The warm-up's bodies are numbered from here, past any the measured run sends. */
const WARMUP_FIRST = 1_000_000_000;

/** Participants of the burst: `actions / BURST_PARTICIPANTS` actions each. */
const BURST_PARTICIPANTS = 500;

/**
 * Action accepted → webhook received: `rate` actions per second for `durationS` (an open loop over
 * keep-alive connections) on a campaign whose endpoint takes LOYALTY_ACTION_APPLIED, every process running.
 * Each action's latency is the receiver's arrival time minus the time its request was sent (same clock).
 * `ordered`: the same on a campaign whose endpoint has `ordering: PARTICIPANT` (the `ordered` figure).
 */
export async function measureE2e(bench: Bench, ordered = false): Promise<E2eFigure> {
  const { settings, seeded, receiver } = bench;
  const campaign = ordered ? seeded.campaigns.e2eOrdered : seeded.campaigns.e2e;
  const phase = ordered ? 'ordered' : 'e2e';
  const sentAt = new Map<string, number>();
  await bench.services.ensure('worker', settings.workers);
  await bench.services.ensure('dispatcher', settings.dispatchers);
  // A warm-up at the same rate, not counted, until its webhooks are in: the first seconds of a load after
  // another figure are the processes catching up with it, not this figure's latency.
  receiver.received.length = 0;
  const warm = await paced({
    urls: bench.apiUrls,
    rate: settings.e2e.rate,
    durationS: settings.e2e.warmupS,
    connections: settings.e2e.connections,
    ...triggerRequest(seeded.apiKey, campaign, settings.participants),
    first: WARMUP_FIRST,
    onOk: () => {},
  });
  await until(
    `the ${phase} warm-up's webhooks`,
    30_000,
    async () => receiver.received.length >= warm.ok2xx,
  ).catch(() => progress(`${phase}: the warm-up's webhooks did not all arrive within 30 s`));
  await settle(bench, phase);
  receiver.received.length = 0;
  progress(
    `${phase}: ${settings.e2e.rate} actions/s for ${settings.e2e.durationS} s after a ${settings.e2e.warmupS} s warm-up, webhook on LOYALTY_ACTION_APPLIED${ordered ? ', endpoint ordered by participant' : ''}`,
  );
  const ticksBefore = await machineTicks();
  const load = await withHeartbeat(phase, () =>
    paced({
      urls: bench.apiUrls,
      rate: settings.e2e.rate,
      durationS: settings.e2e.durationS,
      connections: settings.e2e.connections,
      ...triggerRequest(seeded.apiKey, campaign, settings.participants),
      onOk: (json, at) => sentAt.set(json.action.id, at),
    }),
  );
  const ticksAfter = await machineTicks();
  const busy = machineBusyPercent(ticksBefore, ticksAfter);
  const machineBusy = busy === null ? null : { percent: busy, cores: ticksAfter!.cores };
  progress(
    `${phase}: ${load.ok2xx} of ${load.sent} accepted in ${load.durationS} s (p50 ${load.latencyMs.p50} ms, p99 ${load.latencyMs.p99} ms${load.unanswered > 0 ? `; ${load.unanswered} still unanswered, counted with their wait so far: lower bounds` : ''})${machineBusy ? `, the machine ${machineBusy.percent} % busy of ${machineBusy.cores * 100}` : ''}; waiting for their webhooks`,
  );
  const arrived = new Map<string, number>();
  let scanned = 0;
  const scan = () => {
    for (; scanned < receiver.received.length; scanned++) {
      const r = receiver.received[scanned]!;
      const id = r.json?.data?.action?.id as string | undefined;
      const sent = id === undefined ? undefined : sentAt.get(id);
      if (id !== undefined && sent !== undefined && !arrived.has(id)) arrived.set(id, r.at - sent);
    }
    return arrived.size;
  };
  const waitStarted = performance.now();
  const waitMs = settings.mode === 'quick' ? 10_000 : 60_000;
  await until(
    'every accepted action’s webhook',
    waitMs,
    () => {
      bench.services.assertAlive();
      return scan() >= sentAt.size;
    },
    { everyMs: 50, state: () => `${arrived.size} of ${sentAt.size}` },
  ).catch((err: Error) => progress(`${phase}: ${err.message}`));
  scan();
  // A webhook still missing counts with the time it has waited so far: its true latency is at least that, so
  // the percentiles are then lower bounds (flagged), never better than what happened.
  const gaveUp = Date.now();
  const missing = [...sentAt].filter(([id]) => !arrived.has(id)).map(([, sent]) => gaveUp - sent);
  const latencies = [...arrived.values(), ...missing].sort((a, b) => a - b);
  const at = (p: number) => percentileMs(latencies, p);
  const { stagesMs, deliveryStagesMs } = await stagesOf(bench, campaign, sentAt, arrived);
  const figure: E2eFigure = {
    load,
    machineBusy,
    received: arrived.size,
    missing: missing.length,
    latencyMs: { p50: at(50), p90: at(90), p99: at(99), max: at(100) },
    lowerBound: missing.length > 0,
    stagesMs,
    deliveryStagesMs,
    burst: await measureBurst(bench, campaign, phase),
  };
  progress(
    `${phase}: ${figure.received} webhooks (${figure.missing} missing, last after ${round((performance.now() - waitStarted) / 1000, 1)} s more), p50 ${figure.latencyMs.p50} ms p99 ${figure.latencyMs.p99} ms; sent → applied p50 ${figure.stagesMs.sentToApplied.p50} p99 ${figure.stagesMs.sentToApplied.p99} ms, applied → received p50 ${figure.stagesMs.appliedToReceived.p50} p99 ${figure.stagesMs.appliedToReceived.p99} ms`,
  );
  const d = figure.deliveryStagesMs;
  const stage = (name: string, s: { p50: number | null; p99: number | null }) =>
    `${name} p50 ${s.p50} p99 ${s.p99}`;
  progress(
    `${phase}: applied → received, stage by stage (ms): ${[
      stage('applied → event', d.appliedToEvent),
      stage('event → message', d.eventToMessage),
      stage('message → attempt', d.messageToAttempt),
      stage('attempt → received', d.attemptToReceived),
    ].join(', ')}`,
  );
  return figure;
}

/**
 * `E2eFigure.stagesMs` and `deliveryStagesMs`: each measured action's applied time (the ledger's `applied_at`),
 * its event's, its message's and its first attempt's, all written from this machine's clock and read from the
 * run's database in one statement after the load, against the time its request was sent and its webhook arrived.
 */
async function stagesOf(
  bench: Bench,
  campaign: BenchCampaign,
  sentAt: Map<string, number>,
  arrived: Map<string, number>,
): Promise<Pick<E2eFigure, 'stagesMs' | 'deliveryStagesMs'>> {
  const rows = await bench.sql<
    { id: string; applied: number; event: number | null; message: number | null; attempt: number | null }[]
  >`
    select a.id, (extract(epoch from a.applied_at) * 1000)::float8 as applied,
      (extract(epoch from e.created_at) * 1000)::float8 as event,
      (extract(epoch from m.created_at) * 1000)::float8 as message,
      (extract(epoch from (select min(w.attempted_at) from webhook_attempts w where w.message_id = m.id)) * 1000)::float8
        as attempt
    from loyalty_actions a
    left join events e on e.campaign_id = a.campaign_id and e.type = 'LOYALTY_ACTION_APPLIED'
      and e.data #>> '{action,id}' = a.id
    left join webhook_messages m on m.event_id = e.id
    where a.campaign_id = ${campaign.id} and a.applied_at is not null`;
  const lists: Record<keyof E2eFigure['stagesMs'] | keyof E2eFigure['deliveryStagesMs'], number[]> = {
    sentToApplied: [],
    appliedToReceived: [],
    appliedToEvent: [],
    eventToMessage: [],
    messageToAttempt: [],
    attemptToReceived: [],
  };
  for (const r of rows) {
    const sent = sentAt.get(r.id);
    if (sent === undefined) continue;
    const received = arrived.has(r.id) ? sent + arrived.get(r.id)! : null;
    lists.sentToApplied.push(r.applied - sent);
    if (received !== null) lists.appliedToReceived.push(received - r.applied);
    if (r.event === null || r.message === null) continue;
    lists.appliedToEvent.push(r.event - r.applied);
    lists.eventToMessage.push(r.message - r.event);
    if (r.attempt === null) continue;
    lists.messageToAttempt.push(r.attempt - r.message);
    if (received !== null) lists.attemptToReceived.push(received - r.attempt);
  }
  return {
    stagesMs: {
      sentToApplied: spread(lists.sentToApplied),
      appliedToReceived: spread(lists.appliedToReceived),
    },
    deliveryStagesMs: {
      appliedToEvent: spread(lists.appliedToEvent),
      eventToMessage: spread(lists.eventToMessage),
      messageToAttempt: spread(lists.messageToAttempt),
      attemptToReceived: spread(lists.attemptToReceived),
    },
  };
}

/** `E2eFigure.burst`: the actions queued at once, then the time until each one's webhook arrived. */
async function measureBurst(
  bench: Bench,
  campaign: BenchCampaign,
  phase: string,
): Promise<E2eFigure['burst']> {
  const actions = bench.settings.mode === 'quick' ? 5_000 : 20_000;
  await settle(bench, `${phase} burst`);
  bench.receiver.received.length = 0;
  const started = performance.now();
  const ids = new Set(await queueActions(bench, campaign, actions, BURST_PARTICIPANTS));
  const arrived = new Set<string>();
  let scanned = 0;
  const scan = () => {
    for (; scanned < bench.receiver.received.length; scanned++) {
      const id = bench.receiver.received[scanned]!.json?.data?.action?.id as string | undefined;
      if (id !== undefined && ids.has(id)) arrived.add(id);
    }
    return arrived.size;
  };
  await until(
    `${phase}: every burst action's webhook`,
    120_000,
    () => {
      bench.services.assertAlive();
      return scan() >= actions;
    },
    { everyMs: 20, state: () => `${arrived.size} of ${actions}` },
  ).catch((err: Error) => progress(`${phase}: ${err.message}`));
  const seconds = (performance.now() - started) / 1000;
  const burst = {
    actions,
    participants: BURST_PARTICIPANTS,
    seconds: round(seconds, 2),
    perSecond: round(scan() / seconds, 0),
    received: arrived.size,
  };
  progress(
    `${phase}: a burst of ${actions} actions over ${BURST_PARTICIPANTS} participants: ${burst.received} webhooks in ${burst.seconds} s (${burst.perSecond}/s)`,
  );
  return burst;
}
