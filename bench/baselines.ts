/**
 * The three baselines, each measured in the same run, on the same machine, with the same tool and
 * concurrency as the figure it stands beside: what the machine does for that work with nothing of
 * Stampcard in the way.
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { connectPostgres } from '@stampcard/db';
import { Agent, request } from 'undici';
import { type ClosedLoopResult, closedLoop, type HammerOptions, type HammerResult, hammer } from './load';
import type { BenchCampaign } from './seed';
import { freePort, spawnNode, stopChild, waitHttpOk } from './service';
import { round, within } from './util';

/** Starts a bare server (`bench/bare-server.ts`) in `mode` on a free port, ready: its URL and its process. */
async function startBare(name: string, mode: 'answer' | 'accept', env: Record<string, string> = {}) {
  const port = await freePort();
  const child = spawnNode(name, ['bench/bare-server.ts'], {
    ...env,
    PORT: String(port),
    BARE_MODE: mode,
    NODE_ENV: 'production',
  });
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitHttpOk(`${url}/ready`, 30_000, () => {
      if (child.exitCode !== null) throw new Error(`bare server ${name} exited (${child.exitCode})`);
    });
  } catch (err) {
    await stopChild(child);
    throw err;
  }
  return { url, child };
}

/**
 * Ingest baseline: as many bare `@hono/node-server` processes as there are API processes, each answering a
 * fixed JSON, hit by the load generator exactly as the API is (same connections, duration, warm-up, requests).
 */
export async function ingestBaseline(
  apiProcesses: number,
  load: Omit<HammerOptions, 'urls'>,
  warmupS: number,
): Promise<HammerResult> {
  const children = [];
  try {
    const urls: string[] = [];
    for (let i = 0; i < apiProcesses; i++) {
      const bare = await startBare(`bare${i + 1}`, 'answer');
      children.push(bare.child);
      urls.push(bare.url);
    }
    await hammer({ ...load, urls, durationS: warmupS });
    return await hammer({ ...load, urls });
  } finally {
    await Promise.all(children.map((c) => stopChild(c)));
  }
}

/**
 * The one caller's floor: a bare server that, per request, runs one Redis script and commits one row to
 * PostgreSQL before it answers (`BARE_MODE=accept`), sent the same requests by one caller, one at a time, after
 * a warm-up of a tenth as many. What this machine's round trips cost an accept with nothing of Stampcard's in
 * the way; the one caller's figure is read against it.
 */
export async function serialFloor(opts: {
  dbUrl: string;
  redisUrl: string;
  loop: Omit<Parameters<typeof closedLoop>[0], 'url' | 'connections'>;
}): Promise<ClosedLoopResult> {
  const bare = await startBare('floor', 'accept', { DATABASE_URL: opts.dbUrl, REDIS_URL: opts.redisUrl });
  try {
    const { loop } = opts;
    await closedLoop({ ...loop, url: bare.url, connections: 1, requests: Math.ceil(loop.requests / 10) });
    return await closedLoop({ ...loop, url: bare.url, connections: 1, first: loop.first + loop.requests });
  } finally {
    await stopChild(bare.child);
  }
}

export type ApplyBaselineResult = {
  actions: number;
  connections: number;
  seconds: number;
  perSecond: number;
};

/**
 * Apply baseline: the least a worker could do per action, one transaction each (insert an APPLIED ledger row
 * into `loyalty_actions`, add one to the participant's counter), from `connections` postgres.js connections
 * (the worker's pool size), on a campaign of its own with as many participants.
 */
export async function applyBaseline(opts: {
  dbUrl: string;
  campaign: BenchCampaign;
  participants: number;
  actions: number;
  connections: number;
}): Promise<ApplyBaselineResult> {
  const sql = connectPostgres(opts.dbUrl, { max: opts.connections, onnotice: () => {} });
  try {
    await sql`select 1`;
    const tag = randomBytes(4).toString('hex');
    let next = 0;
    const started = performance.now();
    await within(
      'the apply baseline',
      Math.max(120_000, opts.actions * 10),
      Promise.all(
        Array.from({ length: opts.connections }, async () => {
          while (next < opts.actions) {
            const n = next++;
            const participantId = `${opts.campaign.id}p${n % opts.participants}`;
            await sql.begin(async (tx) => {
              await tx`
                insert into loyalty_actions
                  (id, campaign_id, participant_id, reward_id, status, metadata, created_at, applied_at)
                values (${`act_b${tag}${String(n).padStart(11, '0')}`}, ${opts.campaign.id}, ${participantId},
                  ${opts.campaign.rewardId}, 'APPLIED', ${sql.json({ n })}, now(), now())`;
              await tx`
                update participants set loyalty_action_count = loyalty_action_count + 1, updated_at = now()
                where id = ${participantId}`;
            });
          }
        }),
      ),
    );
    const seconds = (performance.now() - started) / 1000;
    return {
      actions: opts.actions,
      connections: opts.connections,
      seconds: round(seconds, 2),
      perSecond: round(opts.actions / seconds),
    };
  } finally {
    await sql.end({ timeout: 5 });
  }
}

export type DispatchBaselineResult = {
  deliveries: number;
  concurrency: number;
  ok2xx: number;
  failed: number;
  seconds: number;
  perSecond: number;
  /**
   * CPU the bench process used per request during the loop, in µs (`process.cpuUsage`): the bare client's and,
   * since the receiver runs in the same process, the receiver's.
   */
  cpuUsPerRequest: number;
};

/**
 * Dispatch baseline: a plain undici `request` POST loop to the same receiver, `concurrency` at once (the
 * dispatcher's DISPATCHER_CONCURRENCY), each POST carrying a real delivery's body and signature headers.
 */
export async function dispatchBaseline(opts: {
  url: string;
  body: string;
  headers: Record<string, string>;
  deliveries: number;
  concurrency: number;
}): Promise<DispatchBaselineResult> {
  const agent = new Agent({ keepAliveTimeout: 30_000, headersTimeout: 15_000, bodyTimeout: 15_000 });
  let next = 0;
  let ok2xx = 0;
  let failed = 0;
  const started = performance.now();
  const cpu = process.cpuUsage();
  try {
    await within(
      'the dispatch baseline',
      Math.max(120_000, opts.deliveries * 10),
      Promise.all(
        Array.from({ length: opts.concurrency }, async () => {
          while (next < opts.deliveries) {
            next += 1;
            try {
              const res = await request(opts.url, {
                method: 'POST',
                dispatcher: agent,
                headers: opts.headers,
                body: opts.body,
              });
              await res.body.text();
              if (res.statusCode >= 200 && res.statusCode < 300) ok2xx += 1;
              else failed += 1;
            } catch {
              failed += 1;
            }
          }
        }),
      ),
    );
  } finally {
    await agent.close();
  }
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  return {
    deliveries: opts.deliveries,
    concurrency: opts.concurrency,
    ok2xx,
    failed,
    seconds: round(seconds, 2),
    perSecond: round(ok2xx / seconds),
    cpuUsPerRequest: round((used.user + used.system) / Math.max(1, ok2xx)),
  };
}
