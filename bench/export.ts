import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import {
  type Ctx,
  createAccount,
  createApiKey,
  createCampaign,
  createUser,
  systemClock,
} from '@stampcard/core';
import type { DbHandle } from '@stampcard/db';
import { withScratchDatabase } from './database';
import { exited, freePort, HEAP_CAP, spawnNode, stopChild, waitHttpOk } from './service';
import { progress, round } from './util';

/**
 * A campaign of `--participants` (a million by default) exported through a running API process (from the
 * sources, as the other benches run it, with the service's heap cap): the export's time, rows and bytes, and the
 * API's resident memory before, at its peak (sampled every 100 ms, and the kernel's high-water mark) and after.
 */
const USAGE = 'usage: npm run bench:export -- [--participants N (10000..10000000, default 1000000)]';
const { values } = parseArgs({
  args: process.argv.slice(2),
  options: { participants: { type: 'string' }, help: { type: 'boolean' } },
  strict: true,
});
if (values.help) {
  console.log(USAGE);
  process.exit(0);
}
const N = Number(values.participants ?? 1_000_000);
if (!Number.isInteger(N) || N < 10_000 || N > 10_000_000) {
  console.error(USAGE);
  process.exit(2);
}

const memoryKb = (pid: number, field: 'VmRSS' | 'VmHWM') =>
  Number(new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);

async function seed(db: DbHandle, campaignId: string) {
  await db.sql`
    insert into participants (id, campaign_id, email, email_key, first_name, last_name, notes, metadata,
      loyalty_action_count, counts_month, loyalty_action_source, created_at, updated_at)
    select 'pt_' || lpad(g::text, 9, '0'), ${campaignId}, 'p' || g || '@example.com', 'p' || g || '@example.com',
      'First ' || g, 'Last, "quoted"', case when g % 10 = 0 then E'a note\nwith a line break' end,
      jsonb_build_object('tier', 'gold', 'visits', g % 50), g % 7, to_char(now(), 'YYYY-MM'), 'API', now(), now()
    from generate_series(1, ${N}) g`;
  await db.sql.unsafe('vacuum analyze participants');
}

await withScratchDatabase('stampcard_bench_export', async (db, url) => {
  const ctx: Ctx = { db: db.db, clock: systemClock };
  const account = await createAccount(ctx, { name: 'Export bench', plan: 'ENTERPRISE' });
  const campaign = await createCampaign(ctx, account.id, { name: 'Big program', status: 'IN_PROGRESS' });
  const user = await createUser(ctx, account.id, { email: 'bench@example.com', role: 'ADMIN' });
  const { key } = await createApiKey(ctx, user.id);
  let t = performance.now();
  await seed(db, campaign.id);
  progress(`seeded ${N.toLocaleString('en')} participants in ${round((performance.now() - t) / 1000, 1)} s`);

  const port = await freePort();
  const api = spawnNode('api', ['scripts/start.ts', 'api'], {
    DATABASE_URL: url,
    PORT: String(port),
    HOST: '127.0.0.1',
    OPERATOR_TOKEN: `op_${'b'.repeat(32)}`,
    LOG_LEVEL: 'warn',
    NODE_ENV: 'production',
    // As the service runs in production (package.json's start scripts, docker-compose.yml).
    NODE_OPTIONS: HEAP_CAP,
  });
  const down = exited(api);
  try {
    const base = `http://127.0.0.1:${port}`;
    await waitHttpOk(`${base}/health`, 60_000, () => {
      if (api.exitCode !== null) throw new Error('the API exited');
    });
    const pid = api.pid!;
    // One small export first, so that the figures are the export's and not the first request's.
    await (await fetch(`${base}/health`)).text();
    const before = memoryKb(pid, 'VmRSS');
    let peak = before;
    const sampler = setInterval(() => {
      peak = Math.max(peak, memoryKb(pid, 'VmRSS'));
    }, 100);
    t = performance.now();
    const res = await fetch(`${base}/v1/campaign/${campaign.id}/participants/export`, {
      headers: { authorization: `Bearer ${key}` },
    });
    if (res.status !== 200) throw new Error(`export answered ${res.status}: ${await res.text()}`);
    let bytes = 0;
    let lines = 0;
    const reader = res.body!.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      bytes += value.length;
      for (const b of value) if (b === 0x0a) lines += 1;
    }
    const seconds = (performance.now() - t) / 1000;
    clearInterval(sampler);
    const hwm = memoryKb(pid, 'VmHWM');
    const after = memoryKb(pid, 'VmRSS');
    const mb = (kb: number) => round(kb / 1024, 0);
    console.log(
      [
        `participants export of ${N.toLocaleString('en')} participants (${lines.toLocaleString('en')} lines with the header and the notes' line breaks, ${round(bytes / 1024 / 1024, 1)} MiB of CSV)`,
        `  time: ${round(seconds, 1)} s (${Math.round(N / seconds).toLocaleString('en')} rows/s, ${round(bytes / 1024 / 1024 / seconds, 1)} MiB/s)`,
        `  API resident memory: ${mb(before)} MB before, ${mb(Math.max(peak, 0))} MB at the sampled peak (kernel high-water mark ${mb(hwm)} MB), ${mb(after)} MB after`,
      ].join('\n'),
    );
  } finally {
    await stopChild(api);
    await down;
  }
});
