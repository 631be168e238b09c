import { performance } from 'node:perf_hooks';
import type { RedisClient } from '@stampcard/jobs';
import { Cluster } from 'ioredis';
import { queueActions } from '../backlog';
import { type DispatchBaselineResult, dispatchBaseline } from '../baselines';
import type { Bench } from '../context';
import { operator } from '../seed';
import { settle } from '../settle';
import { progress, round, until, withHeartbeat } from '../util';

/** The operator API replays at most this many messages per call (`MAX_REPLAY` in @stampcard/core). */
const MAX_REPLAY = 10_000;

export type DispatchFigure = {
  stampcard: {
    deliveries: number;
    /** Replay requests sent (one per window of at most 10,000 messages). */
    replayCalls: number;
    seconds: number;
    perSecond: number;
    /** Dispatcher concurrency (DISPATCHER_CONCURRENCY) and per-endpoint cap (WEBHOOK_ENDPOINT_CONCURRENCY). */
    concurrency: number;
    endpointConcurrency: number;
    /** Making the messages: actions queued → all first deliveries received (apply + fan-out + deliver). */
    firstRoundSeconds: number;
    /** Requests the receiver got twice for one message during the timed replay (not counted). */
    repeats: number;
    /** How long each operator replay call took to answer, in ms (inside `seconds`). */
    replayCallMs: number[];
    /** Distinct messages received every 5 s of the timed replay. */
    timeline: { s: number; received: number }[];
    /**
     * Commands Redis ran during the timed replay per message delivered (`INFO commandstats`, every master; all
     * clients: the dispatcher's jobs and gate, and the other roles' and the bench's few meanwhile).
     */
    redisCommandsPerDelivery: number;
    /**
     * CPU the dispatcher processes used during the timed replay per message delivered, in µs (`/proc`; null
     * without it): the dispatcher's cost per delivery, steadier from run to run than its rate, which the other
     * processes on the same cores move.
     */
    cpuUsPerDelivery: number | null;
    /** CPU the bench process used meanwhile per message, in µs: the receiver's, with the bench's polling. */
    receiverCpuUsPerDelivery: number;
  };
  baseline: DispatchBaselineResult;
  ratio: number;
};

/** Commands Redis has run since it started (`INFO commandstats`), summed over every master of a cluster. */
async function redisCommands(redis: RedisClient): Promise<number> {
  const nodes = redis instanceof Cluster ? redis.nodes('master') : [redis];
  let total = 0;
  for (const node of nodes) {
    for (const [, calls] of (await node.info('commandstats')).matchAll(/calls=(\d+)/g))
      total += Number(calls);
  }
  return total;
}

/** Headers a request of the receiver carried that a client sets per connection, not per message. */
const HOP_HEADERS = new Set(['host', 'content-length', 'connection', 'transfer-encoding', 'keep-alive']);

/**
 * Waits until the receiver has `n` distinct messages (by `webhook-id`: a message delivered twice, which
 * at-least-once delivery allows, counts once). Answers how many requests were repeats.
 */
async function waitReceived(
  bench: Bench,
  n: number,
  timeoutMs: number,
  what: string,
): Promise<{ repeats: number; timeline: { s: number; received: number }[] }> {
  const ids = new Set<string>();
  const started = performance.now();
  const timeline: { s: number; received: number }[] = [];
  let scanned = 0;
  const count = () => {
    const received = bench.receiver.received;
    for (; scanned < received.length; scanned++) {
      const id = received[scanned]!.headers['webhook-id'];
      ids.add(typeof id === 'string' ? id : `#${scanned}`);
    }
    return ids.size;
  };
  let reported = performance.now();
  await until(
    what,
    timeoutMs,
    () => {
      bench.services.assertAlive();
      const now = performance.now();
      if (now - started >= (timeline.length + 1) * 5000) {
        timeline.push({ s: round((now - started) / 1000, 1), received: count() });
      }
      if (now - reported > 10_000) {
        reported = now;
        progress(`dispatch: ${count()} of ${n} received`);
      }
      return count() >= n;
    },
    { everyMs: 20, state: () => `${count()} of ${n} received` },
  );
  return { repeats: scanned - ids.size, timeline };
}

/** Packs (created_at, count) groups, oldest first, into [since, until) windows of at most MAX_REPLAY messages. */
function replayWindows(groups: { at: Date; n: number }[]): { since: number; until: number; n: number }[] {
  const windows: { since: number; until: number; n: number }[] = [];
  for (const g of groups) {
    const last = windows.at(-1);
    const ms = g.at.getTime();
    if (last && last.n + g.n <= MAX_REPLAY) {
      last.until = ms + 1;
      last.n += g.n;
    } else windows.push({ since: ms, until: ms + 1, n: g.n });
  }
  return windows;
}

/**
 * Webhook deliveries per second of the dispatcher process: `deliveries` LOYALTY_ACTION_APPLIED messages are
 * made and delivered once (actions queued, applied by the worker, fanned out, delivered), then, all settled,
 * the operator replays every one of them (`POST /admin/v1/webhook-endpoints/{id}/replay {"status":"SUCCEEDED"}`,
 * in windows of at most 10,000) and the clock runs until the receiver has them all again. Beside it, a plain
 * undici POST loop of as many requests to the same receiver, DISPATCHER_CONCURRENCY at once.
 */
export async function measureDispatch(bench: Bench): Promise<DispatchFigure> {
  const { settings, seeded, receiver } = bench;
  const n = settings.dispatch.deliveries;
  const campaign = seeded.campaigns.dispatch;
  const endpointId = campaign.endpointId!;
  await bench.services.enterPhase('dispatch');
  progress('dispatch: starting the dispatcher process');
  // Its messages are made end to end: a worker applies their actions (the apply figure started one, unless the
  // run measures this figure alone).
  await bench.services.ensure('worker', settings.workers);
  await bench.services.ensure('dispatcher', settings.dispatchers);
  const deliverQueue = bench.queues.forJob('webhook-message.deliver');
  await until('the dispatcher to take jobs', 60_000, async () => {
    bench.services.assertAlive();
    return (await deliverQueue.getWorkersCount()) > 0;
  });

  progress(`dispatch: making ${n} messages (actions queued → applied → fanned out → delivered once)`);
  receiver.received.length = 0;
  const made = performance.now();
  await queueActions(bench, campaign, n);
  await waitReceived(bench, n, Math.max(120_000, n * 20), `${n} first deliveries`);
  const firstRoundSeconds = (performance.now() - made) / 1000;
  let settled = '';
  await until(
    'every message SUCCEEDED and the outbox empty',
    60_000,
    async () => {
      const [m] = await bench.sql<{ ok: number; all: number }[]>`
        select count(*) filter (where status = 'SUCCEEDED')::int as ok, count(*)::int as all
        from webhook_messages where endpoint_id = ${endpointId}`;
      const [e] = await bench.sql<
        { n: number }[]
      >`select count(*)::int as n from events where dispatched_at is null`;
      settled = `${m?.ok} of ${m?.all} messages SUCCEEDED, ${e?.n} events not fanned out`;
      return m?.ok === n && m.all === n && e?.n === 0;
    },
    { everyMs: 200, state: () => settled },
  );
  const sample = receiver.received[0]!;
  const headers = Object.fromEntries(
    Object.entries(sample.headers).flatMap(([k, v]) =>
      HOP_HEADERS.has(k) || typeof v !== 'string' ? [] : [[k, v]],
    ),
  );

  await settle(bench, 'dispatch');
  progress(
    `dispatch baseline: ${n} undici POSTs of a ${sample.body.length}-byte delivery, ${settings.dispatch.concurrency} at once`,
  );
  receiver.received.length = 0;
  const baseline = await withHeartbeat('dispatch baseline', () =>
    dispatchBaseline({
      url: receiver.url,
      body: sample.body,
      headers,
      deliveries: n,
      concurrency: settings.dispatch.concurrency,
    }),
  );
  progress(`dispatch baseline: ${baseline.perSecond} requests/s`);

  await settle(bench, 'dispatch');
  receiver.received.length = 0;
  const groups = await bench.sql<{ at: Date; n: number }[]>`
    select created_at as at, count(*)::int as n from webhook_messages
    where endpoint_id = ${endpointId} and status = 'SUCCEEDED'
    group by created_at order by created_at`;
  const windows = replayWindows(groups);
  progress(
    `dispatch: replaying ${n} SUCCEEDED messages (${windows.length} replay call(s)), dispatcher running`,
  );
  const commandsBefore = await redisCommands(bench.redis);
  const dispatcherCpuBefore = await bench.services.cpuMsOf('dispatcher');
  const receiverCpu = process.cpuUsage();
  const started = performance.now();
  let replayed = 0;
  const replayCallMs: number[] = [];
  for (const w of windows) {
    const callStarted = performance.now();
    const answer = await operator(
      bench.apiUrls[0]!,
      bench.token,
      'POST',
      `/admin/v1/webhook-endpoints/${endpointId}/replay`,
      {
        status: 'SUCCEEDED',
        since: w.since,
        until: w.until,
      },
    );
    replayCallMs.push(Math.round(performance.now() - callStarted));
    replayed += answer.replayed as number;
  }
  if (replayed !== n) throw new Error(`the replay took ${replayed} messages, not ${n}`);
  const { repeats, timeline } = await waitReceived(
    bench,
    n,
    Math.max(120_000, n * 20),
    `${n} replayed deliveries`,
  );
  const seconds = (performance.now() - started) / 1000;
  const perSecond = round(n / seconds);
  const receiverUsed = process.cpuUsage(receiverCpu);
  const dispatcherCpuAfter = await bench.services.cpuMsOf('dispatcher');
  const cpuUsPerDelivery =
    dispatcherCpuBefore === null || dispatcherCpuAfter === null
      ? null
      : round(((dispatcherCpuAfter - dispatcherCpuBefore) * 1000) / n);
  const receiverCpuUsPerDelivery = round((receiverUsed.user + receiverUsed.system) / n);
  const redisCommandsPerDelivery = ((await redisCommands(bench.redis)) - commandsBefore) / n;
  progress(
    `dispatch: ${perSecond} deliveries/s, ${round(redisCommandsPerDelivery, 2)} Redis commands per delivery; ` +
      `CPU per delivery ${cpuUsPerDelivery ?? 'n/a'} µs in the dispatcher, ${receiverCpuUsPerDelivery} µs in ` +
      `the bench's receiver (the bare loop: ${baseline.cpuUsPerRequest} µs per request, client and receiver)`,
  );
  return {
    stampcard: {
      deliveries: n,
      replayCalls: windows.length,
      seconds: round(seconds, 2),
      perSecond,
      concurrency: settings.dispatch.concurrency,
      endpointConcurrency: Number(process.env.WEBHOOK_ENDPOINT_CONCURRENCY || 32),
      firstRoundSeconds: round(firstRoundSeconds, 2),
      repeats,
      replayCallMs,
      timeline,
      redisCommandsPerDelivery: round(redisCommandsPerDelivery, 2),
      cpuUsPerDelivery,
      receiverCpuUsPerDelivery,
    },
    baseline,
    ratio: round(perSecond / baseline.perSecond, 4),
  };
}
