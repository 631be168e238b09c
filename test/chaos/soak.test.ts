import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { type OwnRedis, ownRedis } from '../support/own-redis';
import { type Panel, svgPlot } from './plot';
import { chaosProgram, ledgerFigures, load, report, sleep, until, useChaosStack } from './support';

/**
 * Scenario 7: a soak. A steady load of loyalty actions (about 40 a second), each applied by the worker and its
 * events delivered by the dispatcher to a receiver, for `CHAOS_SOAK_MINUTES` (2 in CI; 10 is the long form).
 * Every few seconds the resident memory of the API, the worker and the dispatcher, the memory Redis uses, and
 * the answers' latency (p50, p99) are sampled. After a warm-up, memory must stay flat: a process whose memory
 * keeps growing under a steady load holds on to something per request. Latency is drawn and reported, not
 * asserted (timings are the benchmark's to measure); keeping up is: when the load stops, every action is
 * applied and every webhook delivered within a minute. The curves are drawn as an SVG
 * (`CHAOS_SOAK_PLOT`, the README's picture is `docs/chaos-soak.svg`; otherwise a file in the temp directory).
 */
const MINUTES = Number(process.env.CHAOS_SOAK_MINUTES ?? 2);
const PLOT = process.env.CHAOS_SOAK_PLOT ?? join(tmpdir(), `stampcard-soak-${process.pid}.svg`);
const SAMPLE_MS = Math.max(2000, Math.round((MINUTES * 60_000) / 150));
const MB = 1024 * 1024;

let redis: OwnRedis | undefined;
let probe: Redis | undefined;
const stack = useChaosStack({ redisUrl: () => redis!.url });
const received = { count: 0 };
const server = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    received.count += 1;
    res.end('ok');
  });
});
afterAll(async () => {
  probe?.disconnect();
  await new Promise((r) => server.close(r));
  await redis?.stop();
});

/** The resident memory of a process, from /proc, in MiB. */
function rssOf(pid: number): number {
  const kb = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kb) / 1024;
}

function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

const median = (xs: number[]) =>
  quantile(
    [...xs].sort((a, b) => a - b),
    0.5,
  );

type Sample = {
  minute: number;
  api: number;
  worker: number;
  dispatcher: number;
  redis: number;
  p50: number;
  p99: number;
  perSecond: number;
};

describe('chaos: a soak under a steady load', () => {
  it(
    'keeps the memory of every process and of Redis flat, and keeps up',
    async () => {
      redis = await ownRedis();
      probe = new Redis(redis.url, { maxRetriesPerRequest: 1 });
      const roles = {
        api: await stack.start('api'),
        worker: await stack.start('worker'),
        dispatcher: await stack.start('dispatcher'),
      };
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const p = await chaosProgram(stack, { conversionsRequired: 5, isUnlimited: true });
      const made = await p.op.post(`/admin/v1/campaigns/${p.campaignId}/webhook-endpoints`, {
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/soak`,
        eventTypes: ['LOYALTY_ACTION_APPLIED', 'NEW_PARTICIPANT_ADDED', 'PARTICIPANT_REACHED_A_GOAL'],
      });
      expect(made.status).toBe(200);

      const started = performance.now();
      const elapsed = () => performance.now() - started;
      let window: number[] = [];
      let answered = 0;
      const samples: Sample[] = [];
      const sample = async () => {
        const latencies = window.sort((a, b) => a - b);
        window = [];
        const info = await probe!.info('memory');
        samples.push({
          minute: elapsed() / 60_000,
          api: rssOf(roles.api.child.pid!),
          worker: rssOf(roles.worker.child.pid!),
          dispatcher: rssOf(roles.dispatcher.child.pid!),
          redis: Number(/used_memory:(\d+)/.exec(info)?.[1]) / MB,
          p50: quantile(latencies, 0.5),
          p99: quantile(latencies, 0.99),
          perSecond: latencies.length / (SAMPLE_MS / 1000),
        });
      };
      const result = await load(stack, p, {
        total: Number.POSITIVE_INFINITY,
        concurrency: 2,
        participants: 5000,
        pauseMs: 35,
        stop: () => elapsed() >= MINUTES * 60_000,
        onAnswer: (_what, ms) => {
          answered += 1;
          window.push(ms);
        },
        during: async () => {
          while (elapsed() < MINUTES * 60_000) {
            await sleep(SAMPLE_MS);
            await sample();
          }
        },
      });
      // Kept up: what was accepted is applied, and its webhooks delivered, within moments of the load's end.
      const recoveryMs = await until(
        async () => {
          const [left] = await stack.sql<{ actions: number; messages: number }[]>`
            select
              (select count(*) from loyalty_actions where campaign_id = ${p.campaignId} and status = 'QUEUED')::int
                as actions,
              (select count(*) from webhook_messages where campaign_id = ${p.campaignId} and status = 'PENDING')::int
                as messages`;
          return left!.actions === 0 && left!.messages === 0;
        },
        60_000,
        'every accepted action applied and its webhooks delivered',
      );
      const figures = await ledgerFigures(stack.sql, p.campaignId, result.accepted);
      const [messages] = await stack.sql<{ succeeded: number; total: number }[]>`
        select count(*) filter (where status = 'SUCCEEDED')::int as succeeded, count(*)::int as total
        from webhook_messages where campaign_id = ${p.campaignId}`;

      // The first fifth warms up (connections, JIT, pools); the second is where memory stood after it, and the
      // last fifth must not stand above it: its median within a tenth and 16 MiB of the second's peak (the peak,
      // as a process's memory saws up and down between the garbage collector's passes).
      const fifth = Math.max(1, Math.floor(samples.length / 5));
      const early = samples.slice(fifth, 2 * fifth);
      const late = samples.slice(-fifth);
      const memory = ['api', 'worker', 'dispatcher', 'redis'] as const;
      const first = (k: keyof Sample) => median(early.map((s) => s[k]));
      const peak = (k: keyof Sample) => Math.max(...early.map((s) => s[k]));
      const last = (k: keyof Sample) => median(late.map((s) => s[k]));

      const svg = svgPlot(
        `Stampcard under a steady load for ${MINUTES} min`,
        `Resident memory of the API, worker and dispatcher processes and memory used by Redis, in MiB, and the latency of the API's answers (p50, p99) in ms, sampled every ${SAMPLE_MS / 1000} s while about ${Math.round(answered / (MINUTES * 60))} loyalty actions a second were accepted, applied and their webhooks delivered.`,
        [
          {
            title: 'Memory',
            unit: 'MiB',
            series: memory.map((k) => ({ name: k, points: samples.map((s) => [s.minute, s[k]]) })),
          },
          {
            title: 'Latency of the answers',
            unit: 'ms',
            series: (['p50', 'p99'] as const).map((k) => ({
              name: k,
              points: samples.map((s) => [s.minute, s[k]]),
            })),
          },
        ] satisfies Panel[],
      );
      writeFileSync(PLOT, svg);

      report('soak', {
        minutes: MINUTES,
        accepted: figures.accepted,
        applied: figures.applied,
        lost: figures.lost,
        doubled: figures.doubled,
        perSecond: Math.round(answered / (MINUTES * 60)),
        messages: messages!.total,
        delivered: messages!.succeeded,
        requests: received.count,
        recoveryMs,
        ...Object.fromEntries(memory.map((k) => [`${k}MiB`, `${first(k).toFixed(0)}→${last(k).toFixed(0)}`])),
        p50ms: `${first('p50').toFixed(0)}→${last('p50').toFixed(0)}`,
        p99ms: `${first('p99').toFixed(0)}→${last('p99').toFixed(0)}`,
        plot: PLOT,
      });
      expect(figures.lost).toBe(0);
      expect(figures.doubled).toBe(0);
      expect(figures.unknown).toBe(0);
      expect(messages!.succeeded).toBe(messages!.total);
      expect(received.count).toBeGreaterThanOrEqual(messages!.total);
      expect(samples.length).toBeGreaterThanOrEqual(10);
      for (const k of memory) {
        // A leak of a KiB a request grows by about 2.5 MiB a minute at this rate: the long form is the one that
        // would see a small one.
        expect(last(k), `${k}: MiB at the end, against the peak after the warm-up`).toBeLessThanOrEqual(
          peak(k) * 1.1 + 16,
        );
      }
    },
    60_000 + MINUTES * 60_000 * 1.5,
  );
});
