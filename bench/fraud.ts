/**
 * `npm run bench:fraud -- [--participants N] [--runs R]`: what anti-fraud scoring costs a creating action as a
 * campaign grows.
 *
 * On a database of its own (created, migrated, dropped at the end, on failure too) it seeds a campaign with N
 * participants (default 100,000) and a small one with 1,000, alike: five participants share each fingerprint,
 * addresses spread over a /16, names from short lists, so that look-ups find real candidates. The API is
 * served by the composition root (`scripts/stack.ts`, no worker), and R loyalty actions that each create their
 * participant (a new email, a fingerprint shared with five others, a new address: the whole score runs) are
 * sent one after another to each campaign, timed from request to answer, after ten warm-ups. The anti-fraud
 * look-up is then run with EXPLAIN (ANALYZE, BUFFERS) in the big campaign to show the indexes it reads.
 * Prints a markdown table (p50 / p99 / max ms) and the plan's scans.
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { createLogger, loadConfig } from '@stampcard/config';
import {
  type Ctx,
  createAccount,
  createApiKey,
  createCampaign,
  createReward,
  createUser,
  fraudLookupStatement,
  systemClock,
} from '@stampcard/core';
import type { DbHandle } from '@stampcard/db';
import { sql } from 'drizzle-orm';
import { startStack } from '../scripts/stack';
import { withScratchDatabase } from './database';
import { percentile, progress, round } from './util';

const USAGE =
  'usage: npm run bench:fraud -- [--participants N (1000..5000000, default 100000)] [--runs R (default 200)]';
const { values } = parseArgs({
  args: process.argv.slice(2),
  options: { participants: { type: 'string' }, runs: { type: 'string' }, help: { type: 'boolean' } },
  strict: true,
});
if (values.help) {
  console.log(USAGE);
  process.exit(0);
}
const N = Number(values.participants ?? 100_000);
const RUNS = Number(values.runs ?? 200);
if (
  !Number.isInteger(N) ||
  N < 1000 ||
  N > 5_000_000 ||
  !Number.isInteger(RUNS) ||
  RUNS < 1 ||
  RUNS > 10_000
) {
  console.error(USAGE);
  process.exit(2);
}
const SMALL = 1000;
const SHARING = 5;

const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** `n` participants in one statement; participant g has fingerprint `fp<g / 5>` and address 10.x.y.z. */
async function seed(db: DbHandle, campaignId: string, n: number) {
  await db.sql.begin(async (tx) => {
    await tx`
      insert into participants (id, campaign_id, email, email_key, first_name, last_name, ip_address, fingerprint,
        counts_month, loyalty_action_source, created_at, updated_at)
      select ${campaignId} || lpad(g::text, 9, '0'), ${campaignId}, 'p' || g || '@bench.test', 'p' || g || '@bench.test',
        (array['Ada','Grace','Alan','Edsger','Barbara','Donald','Frances','Ken'])[1 + g % 8],
        (array['Lovelace','Hopper','Turing','Dijkstra','Liskov','Knuth','Allen','Thompson'])[1 + (g / 8) % 8],
        '10.' || (g / 65536) % 256 || '.' || (g / 256) % 256 || '.' || g % 256,
        'fp' || (g / ${SHARING}), to_char(now() at time zone 'UTC', 'YYYY-MM'), 'IMPORT', now(), now()
      from generate_series(0, ${n}::int - 1) as g`;
    await tx`update campaigns set participant_count = participant_count + ${n} where id = ${campaignId}`;
    await tx`update accounts set participant_count = participant_count + ${n}
      where id = (select account_id from campaigns where id = ${campaignId})`;
  });
}

function stats(ms: number[]) {
  const sorted = [...ms].sort((a, b) => a - b);
  const r = (n: number) => (n < 10 ? round(n, 2) : round(n, 1));
  return `${r(percentile(sorted, 50)!)} / ${r(percentile(sorted, 99)!)} / ${r(sorted[sorted.length - 1]!)}`;
}

type PlanNode = { 'Node Type': string; 'Index Name'?: string; 'Relation Name'?: string; Plans?: PlanNode[] };

async function measure(db: DbHandle, dbUrl: string) {
  const ctx: Ctx = { db: db.db, clock: systemClock };
  const limits = {
    second: 1_000_000,
    minute: 1_000_000,
    hour: 1_000_000,
    concurrency: 1000,
    slowdownAfter: 0,
  };
  const account = await createAccount(ctx, { name: 'Fraud bench', plan: 'ENTERPRISE', rateLimits: limits });
  const user = await createUser(ctx, account.id, { email: 'bench@bench.test', role: 'ADMIN' });
  const { key } = await createApiKey(ctx, user.id);
  const campaigns = [
    { label: `${N.toLocaleString('en')} participants`, n: N },
    { label: `${SMALL.toLocaleString('en')} participants`, n: SMALL },
  ];
  const made = [];
  for (const c of campaigns) {
    const campaign = await createCampaign(ctx, account.id, { name: c.label, status: 'IN_PROGRESS' });
    const reward = await createReward(ctx, campaign.id, { title: 'Coffee', isUnlimited: true });
    const t = performance.now();
    await seed(db, campaign.id, c.n);
    progress(`${c.label}: seeded in ${round((performance.now() - t) / 1000, 1)} s`);
    made.push({ ...c, campaign, reward });
  }
  await db.sql`vacuum analyze participants`;

  const prefix = `stampcard_fraud_${randomBytes(4).toString('hex')}`;
  const config = loadConfig({
    NODE_ENV: 'production',
    DATABASE_URL: dbUrl,
    REDIS_URL: redisUrl,
    QUEUE_PREFIX: prefix,
    OPERATOR_TOKEN: `op_${randomBytes(16).toString('hex')}`,
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
  });
  const stack = await startStack({
    config,
    logger: createLogger({ level: 'warn', name: 'bench-fraud' }),
    worker: false,
    dispatcher: false,
  });
  const base = `http://127.0.0.1:${stack.api!.port}`;
  const rows: string[] = [];
  try {
    for (const m of made) {
      let seq = 0;
      const create = async () => {
        const i = seq++;
        const res = await fetch(`${base}/v1/campaign/${m.campaign.id}/loyalty-action`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({
            participantEmail: `new${i}@bench.example`,
            rewardId: m.reward.id,
            firstName: 'Zelda',
            fingerprint: `fp${(i * 7919) % Math.floor(m.n / SHARING)}`,
            ipAddress: `172.16.${Math.floor(i / 256) % 256}.${i % 256}`,
          }),
        });
        await res.text();
        if (res.status !== 200) throw new Error(`creating action answered ${res.status}`);
      };
      for (let i = 0; i < 10; i++) await create();
      const ms: number[] = [];
      for (let i = 0; i < RUNS; i++) {
        const t = performance.now();
        await create();
        ms.push(performance.now() - t);
      }
      rows.push(`| ${m.label.padEnd(24)} | ${String(RUNS).padEnd(7)} | ${stats(ms).padEnd(20)} |`);
      progress(`${m.label}: ${stats(ms)} ms (p50 / p99 / max)`);
    }
  } finally {
    await stack.close();
  }

  // The look-up itself, with its plan, in the big campaign.
  const big = made[0]!;
  const [plan] = await db.db.execute<{ 'QUERY PLAN': [{ Plan: PlanNode; 'Execution Time': number }] }>(
    sql`explain (analyze, buffers, format json) ${fraudLookupStatement(big.campaign.id, {
      email: 'someone+x@bench.example',
      fingerprint: 'fp4242',
      ipAddress: '172.16.9.9',
    })}`,
  );
  const scans: string[] = [];
  const walk = (n: PlanNode) => {
    if (n['Node Type'].includes('Scan'))
      scans.push(`${n['Node Type']} ${n['Index Name'] ?? n['Relation Name'] ?? ''}`);
    for (const c of n.Plans ?? []) walk(c);
  };
  walk(plan!['QUERY PLAN'][0].Plan);

  console.log('\n| campaign                 | actions | accept ms p50 / p99 / max |');
  console.log('| ------------------------ | ------- | -------------------- |');
  for (const r of rows) console.log(r);
  console.log(
    `\nanti-fraud look-up in the ${big.label} campaign: ${round(plan!['QUERY PLAN'][0]['Execution Time'], 2)} ms; ${scans.join(', ')}`,
  );
}

withScratchDatabase('stampcard_fraud', measure).catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
