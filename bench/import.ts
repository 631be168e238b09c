import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import {
  type Ctx,
  createAccount,
  createApiKey,
  createCampaign,
  createReward,
  createUser,
  systemClock,
} from '@stampcard/core';
import { withScratchDatabase } from './database';
import { exited, freePort, HEAP_CAP, spawnNode, stopChild, waitHttpOk } from './service';
import { progress, round } from './util';

/**
 * A CSV file of `--rows` new participants (100,000 by default; every row with a name, a metadata column and a
 * carried-over count, one in a hundred refused) uploaded to a running API process and imported by a running
 * worker process (from the sources, with the service's heap cap, on a scratch database): the upload's time,
 * the import's time to SUCCEEDED (and until its carried-over counts are applied), and the resident memory of
 * both processes before, at their sampled peak and kernel high-water mark, and after.
 */
const USAGE =
  'usage: npm run bench:import -- [--rows N (1000..1000000, default 100000)] [--upload-only (stop once the file is in)]';
const { values } = parseArgs({
  args: process.argv.slice(2),
  options: { rows: { type: 'string' }, 'upload-only': { type: 'boolean' }, help: { type: 'boolean' } },
  strict: true,
});
if (values.help) {
  console.log(USAGE);
  process.exit(0);
}
const N = Number(values.rows ?? 100_000);
if (!Number.isInteger(N) || N < 1000 || N > 1_000_000) {
  console.error(USAGE);
  process.exit(2);
}

const memoryKb = (pid: number, field: 'VmRSS' | 'VmHWM') =>
  Number(new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
const mb = (kb: number) => round(kb / 1024, 0);

/** The file, a part at a time (so that the bench does not hold it whole either). */
async function* file(rewardId: string): AsyncGenerator<Uint8Array> {
  yield Buffer.from(`email,firstName,lastName,metadata.tier,loyaltyActionCount.${rewardId}\r\n`);
  for (let start = 1; start <= N; start += 1000) {
    const lines: string[] = [];
    for (let i = start; i < Math.min(start + 1000, N + 1); i++) {
      lines.push(
        i % 100 === 0
          ? `not-an-email-${i},x,y,gold,1`
          : `p${i}@example.com,First ${i},"Last, ${i}",gold,${i % 3}`,
      );
    }
    yield Buffer.from(`${lines.join('\r\n')}\r\n`);
  }
}

await withScratchDatabase('stampcard_bench_import', async (db, url) => {
  const ctx: Ctx = { db: db.db, clock: systemClock };
  const account = await createAccount(ctx, { name: 'Import bench', plan: 'ENTERPRISE' });
  const campaign = await createCampaign(ctx, account.id, { name: 'Moving in', status: 'IN_PROGRESS' });
  const reward = await createReward(ctx, campaign.id, {
    title: 'Stamp',
    conversionsRequired: 5,
    isUnlimited: true,
  });
  const user = await createUser(ctx, account.id, { email: 'bench@example.com', role: 'ADMIN' });
  const { key } = await createApiKey(ctx, user.id);

  const port = await freePort();
  const env = {
    DATABASE_URL: url,
    PORT: String(port),
    HOST: '127.0.0.1',
    OPERATOR_TOKEN: `op_${'b'.repeat(32)}`,
    QUEUE_PREFIX: `bench_import_${process.pid}`,
    LOG_LEVEL: 'warn',
    NODE_ENV: 'production',
    // As the service runs in production (package.json's start scripts, docker-compose.yml).
    NODE_OPTIONS: HEAP_CAP,
  };
  const api = spawnNode('api', ['scripts/start.ts', 'api'], env);
  const worker = spawnNode('worker', ['scripts/start.ts', 'worker'], env);
  const down = [exited(api), exited(worker)];
  try {
    const base = `http://127.0.0.1:${port}`;
    await waitHttpOk(`${base}/health`, 60_000, () => {
      if (api.exitCode !== null || worker.exitCode !== null) throw new Error('a role exited');
    });
    const pids = { api: api.pid!, worker: worker.pid! };
    const before = { api: memoryKb(pids.api, 'VmRSS'), worker: memoryKb(pids.worker, 'VmRSS') };
    const peak = { ...before };
    const sampler = setInterval(() => {
      for (const role of ['api', 'worker'] as const)
        peak[role] = Math.max(peak[role], memoryKb(pids[role], 'VmRSS'));
    }, 100);
    const headers = { authorization: `Bearer ${key}` };
    let t = performance.now();
    const res = await fetch(`${base}/v1/campaign/${campaign.id}/participants/imports`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'text/csv' },
      body: ReadableStream.from(file(reward.id)),
      duplex: 'half',
    } as RequestInit);
    const started = (await res.json()) as { id: string; sizeBytes: number };
    if (res.status !== 202) throw new Error(`the upload answered ${res.status}: ${JSON.stringify(started)}`);
    const uploadS = (performance.now() - t) / 1000;
    progress(`uploaded ${round(started.sizeBytes / 1024 / 1024, 1)} MiB in ${round(uploadS, 1)} s`);
    if (values['upload-only']) {
      clearInterval(sampler);
      console.log(
        [
          `participant import upload of ${N.toLocaleString('en')} rows (${round(started.sizeBytes / 1024 / 1024, 1)} MiB of CSV, chunked): ${round(uploadS, 1)} s`,
          `  api resident memory: ${mb(before.api)} MB before, ${mb(peak.api)} MB at the sampled peak (kernel high-water mark ${mb(memoryKb(pids.api, 'VmHWM'))} MB), ${mb(memoryKb(pids.api, 'VmRSS'))} MB after`,
        ].join('\n'),
      );
      return;
    }
    t = performance.now();
    let ended: Record<string, number | string> = {};
    for (let last = -1; ; ) {
      const r = await fetch(`${base}/v1/campaign/${campaign.id}/participants/imports/${started.id}`, {
        headers,
      });
      ended = (await r.json()) as typeof ended;
      if (ended.status === 'SUCCEEDED' || ended.status === 'FAILED') break;
      if (ended.rowsDone !== last && Number(ended.rowsDone) % 10_000 < 500)
        progress(`${ended.rowsDone} of ${ended.rowsTotal} rows`);
      last = Number(ended.rowsDone);
      await new Promise((r) => setTimeout(r, 200));
    }
    const importS = (performance.now() - t) / 1000;
    for (;;) {
      const [q] = await db.sql<
        { n: number }[]
      >`select count(*)::int as n from loyalty_actions where status = 'QUEUED'`;
      if (q!.n === 0) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    const appliedS = (performance.now() - t) / 1000;
    clearInterval(sampler);
    const hwm = { api: memoryKb(pids.api, 'VmHWM'), worker: memoryKb(pids.worker, 'VmHWM') };
    const after = { api: memoryKb(pids.api, 'VmRSS'), worker: memoryKb(pids.worker, 'VmRSS') };
    if (ended.status !== 'SUCCEEDED') throw new Error(`the import ended ${ended.status}: ${ended.error}`);
    console.log(
      [
        `participant import of ${N.toLocaleString('en')} rows (${round(started.sizeBytes / 1024 / 1024, 1)} MiB of CSV): ${ended.created} created, ${ended.refused} refused, ${ended.loyaltyActionsQueued} carried-over counts`,
        `  upload: ${round(uploadS, 1)} s; import: ${round(importS, 1)} s (${Math.round(N / importS).toLocaleString('en')} rows/s); its counts applied: ${round(appliedS, 1)} s`,
        ...(['api', 'worker'] as const).map(
          (role) =>
            `  ${role} resident memory: ${mb(before[role])} MB before, ${mb(peak[role])} MB at the sampled peak (kernel high-water mark ${mb(hwm[role])} MB), ${mb(after[role])} MB after`,
        ),
      ].join('\n'),
    );
  } finally {
    await Promise.all([stopChild(api), stopChild(worker)]);
    await Promise.all(down);
  }
});
