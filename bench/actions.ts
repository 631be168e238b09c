/**
 * `npm run bench`: loyalty actions end to end, against the service as `npm start` runs it (API, worker and
 * dispatcher in one process, on a database of its own). This process is the load generator and the webhook
 * receiver: BENCH_ACTIONS trigger requests over keep-alive HTTP, BENCH_CONCURRENCY in flight (or paced at
 * BENCH_RATE per second), spread over BENCH_PARTICIPANTS participants, with one endpoint subscribed to
 * LOYALTY_ACTION_APPLIED on a local `node:http` receiver. It reports the accept rate and latency, how long
 * until the worker has applied all, the action-to-webhook latency, and then the dispatcher alone: every
 * message replayed at once, deliveries per second. Everything stays on loopback; every loop is bounded.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { createServer } from 'node:net';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import postgres from 'postgres';
import { startReceiver } from '../test/support/receiver';

const TOTAL = Number(process.env.BENCH_ACTIONS ?? 5000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 64);
const PARTICIPANTS = Number(process.env.BENCH_PARTICIPANTS ?? 500);
/** Actions per second when set: a steady load, for latencies below saturation. Unset: as fast as it goes. */
const RATE = Number(process.env.BENCH_RATE ?? 0);
/** `BENCH_WEBHOOKS=0`: no endpoint, to see what delivering webhooks costs the rest. */
const WEBHOOKS = process.env.BENCH_WEBHOOKS !== '0';
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const adminUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const TOKEN = `op_${randomBytes(16).toString('hex')}`;
const dbName = `stampcard_bench_${randomBytes(3).toString('hex')}`;
/** `single`: API and worker in one process (`npm start`); `split`: one process each, as in production. */
const LAYOUT = process.env.BENCH_LAYOUT === 'split' ? 'split' : 'single';

const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });

type Reply = { status: number; body: any };
function request(port: number, method: string, path: string, token: string, body?: unknown): Promise<Reply> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method,
        path,
        agent,
        headers: {
          authorization: `Bearer ${token}`,
          ...(payload
            ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }
            : {}),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : null });
        });
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as { port: number };
  await new Promise((r) => srv.close(r));
  return port;
}

function run(args: string[], port: number): ChildProcess {
  const dbUrl = new URL(adminUrl);
  dbUrl.pathname = `/${dbName}`;
  return spawn(process.execPath, ['--import', 'tsx', ...args], {
    cwd: ROOT,
    env: {
      ...process.env,
      DATABASE_URL: dbUrl.toString(),
      PORT: String(port),
      HOST: '127.0.0.1',
      OPERATOR_TOKEN: TOKEN,
      QUEUE_PREFIX: dbName,
      LOG_LEVEL: process.env.LOG_LEVEL ?? 'info',
      NODE_ENV: 'production',
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}

async function startService(port: number): Promise<ChildProcess[]> {
  let children: ChildProcess[];
  if (LAYOUT === 'split') {
    const migrate = run(['packages/db/src/migrate-cli.ts'], port);
    const code = await new Promise((r) => migrate.once('exit', r));
    if (code !== 0) throw new Error('migrations failed');
    children = ['api', 'worker', 'dispatcher'].map((role) => run(['scripts/start.ts', role], port));
  } else {
    children = [run(['scripts/start.ts', 'all'], port)];
  }
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (children.some((c) => c.exitCode !== null)) throw new Error('the service exited during start');
    const ok = await request(port, 'GET', '/ready', '').then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) return children;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('the service did not become ready in 30 s');
}

const port = await freePort();
const services = await startService(port);
const receiver = await startReceiver();
const pct = (sorted: number[], p: number) =>
  sorted.length === 0
    ? null
    : Number(sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!.toFixed(1));
try {
  const op = (method: string, path: string, body?: unknown) => request(port, method, path, TOKEN, body);
  const account = (await op('POST', '/admin/v1/accounts', { name: 'Bench', plan: 'ENTERPRISE' })).body;
  const user = (
    await op('POST', `/admin/v1/accounts/${account.id}/users`, { email: 'bench@example.com', role: 'ADMIN' })
  ).body;
  const key = (await op('POST', `/admin/v1/users/${user.id}/api-keys`)).body.key as string;
  const campaign = (
    await op('POST', `/admin/v1/accounts/${account.id}/campaigns`, { name: 'Bench', status: 'IN_PROGRESS' })
  ).body;
  const reward = (
    await op('POST', `/admin/v1/campaigns/${campaign.id}/rewards`, {
      title: 'Bench',
      conversionsRequired: 10,
      isUnlimited: true,
    })
  ).body;
  const endpoint = WEBHOOKS
    ? (
        await op('POST', `/admin/v1/campaigns/${campaign.id}/webhook-endpoints`, {
          url: receiver.url,
          eventTypes: ['LOYALTY_ACTION_APPLIED'],
        })
      ).body
    : null;
  /** When each action's request was sent (wall clock, as the receiver stamps arrivals). */
  const sentAt = new Map<string, number>();

  const latencies: number[] = [];
  const statuses = new Map<number, number>();
  let next = 0;
  const cpu0 = process.cpuUsage();
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < TOTAL) {
        const i = next++;
        if (RATE > 0) {
          const due = started + (i / RATE) * 1000 - performance.now();
          if (due > 0) await new Promise((r) => setTimeout(r, due));
        }
        const wall = Date.now();
        const t0 = performance.now();
        const r = await request(port, 'POST', `/v1/campaign/${campaign.id}/loyalty-action`, key, {
          participantEmail: `p${i % PARTICIPANTS}@bench.test`,
          rewardId: reward.id,
          metadata: { i },
        });
        latencies.push(performance.now() - t0);
        statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
        if (r.status === 200) sentAt.set(r.body.action.id, wall);
      }
    }),
  );
  const acceptedMs = performance.now() - started;
  const accepted = statuses.get(200) ?? 0;
  const deadline = Date.now() + 300_000;
  let applied = 0;
  while (Date.now() < deadline) {
    applied = (await request(port, 'GET', `/v1/campaign/${campaign.id}`, key)).body.loyaltyActionCount;
    if (applied >= accepted) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  const appliedMs = performance.now() - started;
  const generatorCpu = process.cpuUsage(cpu0);
  latencies.sort((a, b) => a - b);

  // Every applied action's webhook, then the dispatcher alone: all those messages replayed at once.
  if (endpoint) await receiver.waitFor(applied, 300_000).catch(() => {});
  const delivered = receiver.received.length;
  const toWebhook = receiver.received
    .map((r) => r.at - (sentAt.get(r.json?.data?.action?.id) ?? Number.NaN))
    .filter((ms) => Number.isFinite(ms))
    .sort((a, b) => a - b);
  const replayStarted = performance.now();
  if (endpoint) {
    const replay = await op('POST', `/admin/v1/webhook-endpoints/${endpoint.id}/replay`, {
      status: 'SUCCEEDED',
    });
    await receiver.waitFor(delivered + replay.body.replayed, 300_000).catch(() => {});
  }
  const replayMs = performance.now() - replayStarted;
  const replayed = receiver.received.length - delivered;
  console.log(
    JSON.stringify(
      {
        layout: LAYOUT,
        actions: TOTAL,
        concurrency: CONCURRENCY,
        participants: PARTICIPANTS,
        statuses: Object.fromEntries(statuses),
        acceptedPerSecond: Math.round((accepted / acceptedMs) * 1000),
        rate: RATE || 'max',
        acceptLatencyMs: {
          p50: pct(latencies, 50),
          p90: pct(latencies, 90),
          p99: pct(latencies, 99),
          max: pct(latencies, 100),
        },
        appliedAll: applied >= accepted,
        appliedPerSecondEndToEnd: Math.round((applied / appliedMs) * 1000),
        secondsUntilAllApplied: Number((appliedMs / 1000).toFixed(2)),
        loadGeneratorCpuSeconds: Number(((generatorCpu.user + generatorCpu.system) / 1e6).toFixed(2)),
        webhooks: {
          delivered,
          actionToWebhookMs: { p50: pct(toWebhook, 50), p99: pct(toWebhook, 99), max: pct(toWebhook, 100) },
          replayed,
          replayDeliveriesPerSecond: Math.round((replayed / replayMs) * 1000),
        },
      },
      null,
      2,
    ),
  );
} finally {
  await Promise.all(
    services.map((service) => {
      const exited = new Promise((r) => service.once('exit', r));
      service.kill('SIGTERM');
      return exited;
    }),
  );
  agent.destroy();
  await receiver.close();
  const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
  const keys = await redis.keys(`${dbName}:*`);
  if (keys.length > 0) await redis.del(...keys);
  redis.disconnect();
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`drop database if exists "${dbName}" with (force)`);
  await admin.end();
}
