/**
 * `npm run bench`: loyalty actions end to end on this machine. Starts the stack (API + worker) on a
 * database of its own, fires BENCH_ACTIONS trigger requests over HTTP with BENCH_CONCURRENCY in flight,
 * and reports the accept rate and latency and the time until the worker has applied them all.
 * Everything runs on loopback; the load generator shares the machine's cores with the service.
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { createLogger, loadConfig } from '@stampcard/config';
import { createAccount, createApiKey, createCampaign, createReward, createUser, systemClock } from '@stampcard/core';
import { campaigns, createDb, runMigrations } from '@stampcard/db';
import { eq } from 'drizzle-orm';
import postgres from 'postgres';
import { startStack } from '../scripts/stack';

const TOTAL = Number(process.env.BENCH_ACTIONS ?? 5000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 64);
const PARTICIPANTS = Number(process.env.BENCH_PARTICIPANTS ?? 500);
const base = new URL(process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');

const dbName = `stampcard_bench_${randomBytes(3).toString('hex')}`;
const url = new URL(base);
url.pathname = `/${dbName}`;
await runMigrations(url.toString());

const config = loadConfig({
  ...process.env,
  DATABASE_URL: url.toString(),
  PORT: '0',
  HOST: '127.0.0.1',
  QUEUE_PREFIX: `stampcard_bench_${randomBytes(3).toString('hex')}`,
  LOG_LEVEL: 'warn',
  OPERATOR_TOKEN: `op_${randomBytes(16).toString('hex')}`,
});
const stack = await startStack({ config, logger: createLogger({ level: 'warn', name: 'bench' }) });
const handle = createDb(url.toString(), { max: 2 });
const ctx = { db: handle.db, clock: systemClock };

try {
  const account = await createAccount(ctx, { name: 'Bench', plan: 'ENTERPRISE' });
  const user = await createUser(ctx, account.id, { email: 'bench@example.com', role: 'ADMIN' });
  const { key } = await createApiKey(ctx, user.id);
  const campaign = await createCampaign(ctx, account.id, { name: 'Bench', status: 'IN_PROGRESS' });
  const reward = await createReward(ctx, campaign.id, { title: 'Bench', conversionsRequired: 10, isUnlimited: true });
  const endpoint = `http://127.0.0.1:${stack.api!.port}/v1/campaign/${campaign.id}/loyalty-action`;
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };

  const latencies: number[] = [];
  let next = 0;
  let failures = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < TOTAL) {
        const i = next++;
        const t0 = performance.now();
        const res = await fetch(endpoint, {
          method: 'POST',
          headers,
          body: JSON.stringify({ participantEmail: `p${i % PARTICIPANTS}@bench.test`, rewardId: reward.id, metadata: { i } }),
        });
        await res.arrayBuffer();
        latencies.push(performance.now() - t0);
        if (res.status !== 200) failures++;
      }
    }),
  );
  const acceptedMs = performance.now() - started;
  const deadline = Date.now() + 120_000;
  let applied = 0;
  while (Date.now() < deadline) {
    const [row] = await handle.db.select({ n: campaigns.loyaltyActionCount }).from(campaigns).where(eq(campaigns.id, campaign.id));
    applied = row?.n ?? 0;
    if (applied >= TOTAL - failures) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  const appliedMs = performance.now() - started;
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))]!.toFixed(1);
  console.log(
    JSON.stringify(
      {
        actions: TOTAL,
        concurrency: CONCURRENCY,
        participants: PARTICIPANTS,
        failures,
        acceptPerSecond: Math.round((TOTAL / acceptedMs) * 1000),
        latencyMs: { p50: pct(50), p90: pct(90), p99: pct(99), max: pct(100) },
        appliedAll: applied >= TOTAL - failures,
        applyEndToEndPerSecond: Math.round((applied / appliedMs) * 1000),
        secondsUntilAllApplied: Number((appliedMs / 1000).toFixed(2)),
      },
      null,
      2,
    ),
  );
} finally {
  await stack.close();
  await handle.close();
  const admin = postgres(base.toString(), { max: 1, onnotice: () => {} });
  await admin.unsafe(`drop database if exists "${dbName}" with (force)`);
  await admin.end();
}
