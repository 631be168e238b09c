import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import {
  boardPosition,
  type Ctx,
  createAccount,
  createCampaign,
  LEADERBOARD_TYPES,
  type LeaderboardType,
  leaderboardPage,
  manualClock,
  monthKey,
  pageIds,
  participantRanks,
  positionQuery,
  previousMonthKey,
  ranksQuery,
  rebuildLeaderboardBuckets,
  sourcesOf,
} from '@stampcard/core';
import { type DbHandle, participants } from '@stampcard/db';
import { eq, type SQL, sql } from 'drizzle-orm';
import { benchAdminUrl, postgresVersion, withScratchDatabase } from './database';
import { percentile, progress, round } from './util';

const USAGE =
  'usage: npm run bench:ranks -- [--participants N (1000..10000000, default 100000)] [--runs R (default 15)]';
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
const RUNS = Number(values.runs ?? 15);
if (
  !Number.isInteger(N) ||
  N < 1000 ||
  N > 10_000_000 ||
  !Number.isInteger(RUNS) ||
  RUNS < 1 ||
  RUNS > 1000
) {
  console.error(USAGE);
  process.exit(2);
}

/** A fixed instant mid-month, so that every run seeds and reads the same months. */
const clock = manualClock('2026-06-15T12:00:00Z');
const MONTH = monthKey(clock.now());
const PREV = previousMonthKey(MONTH);
const OLDER = previousMonthKey(PREV);
const PAGE = 20;

/**
 * `n` participants of `campaignId` in one statement, ids `<prefix><11 digits>` (12 characters, as real ids), join
 * times spread over the last 180 days (to the millisecond, as the service writes them). About 35 % acted this
 * month and 40 % of those who were there last month acted then (1 + an exponential number of actions, mean 3
 * more), older activity adds a mean of 6; a row's monthly figures belong to the month of its last action, as the
 * worker leaves them (months roll lazily), or to its join month when it never acted since.
 */
async function seed(db: DbHandle, campaignId: string, prefix: string, n: number) {
  const monthStart = `${MONTH}-01T00:00:00Z`;
  const prevStart = `${PREV}-01T00:00:00Z`;
  await db.sql.begin(async (tx) => {
    await tx`select setseed(${prefix === 'b' ? 0.42 : 0.24})`;
    await tx`
      insert into participants (id, campaign_id, email, email_key, counts_month, loyalty_action_count,
        monthly_loyalty_action_count, prev_monthly_loyalty_action_count, loyalty_action_source, created_at, updated_at)
      select id, ${campaignId}, email, email, cm, o + pm + m,
        case cm when ${MONTH} then m when ${PREV} then pm when ${OLDER} then o else 0 end,
        case cm when ${MONTH} then pm when ${PREV} then least(o, 2) else 0 end,
        'IMPORT', joined, joined
      from (
        select id, email, joined, m, pm, o,
          case when m > 0 or joined >= ${monthStart}::timestamptz then ${MONTH}
            when pm > 0 or joined >= ${prevStart}::timestamptz then ${PREV}
            when o > 0 then ${OLDER}
            else to_char(joined at time zone 'UTC', 'YYYY-MM') end as cm
        from (
          select ${prefix} || lpad(g::text, 11, '0') as id, ${prefix} || g || '@bench.test' as email, joined,
            case when random() < 0.35 then 1 + floor(-ln(1 - random()) * 3)::int else 0 end as m,
            case when joined < ${monthStart}::timestamptz and random() < 0.4
              then 1 + floor(-ln(1 - random()) * 3)::int else 0 end as pm,
            case when joined < ${prevStart}::timestamptz then floor(-ln(1 - random()) * 6)::int else 0 end as o
          from (
            select g, date_trunc('milliseconds', ${clock.now().toISOString()}::timestamptz - random() * interval '180 days') as joined
            from generate_series(1, ${n}::int) as g
          ) s
        ) t
      ) u`;
  });
}

/** The id at 0-based `position` of a leaderboard, by OFFSET (slow, setup only), and how many it lists. */
async function atPosition(
  ctx: Ctx,
  campaignId: string,
  type: LeaderboardType,
  position: number,
): Promise<string> {
  const branches = sourcesOf(type, MONTH).map(
    (s) => sql`select q.id, q.created_at, q.${sql.raw(s.count)} as score from ${participants} q
      where q.campaign_id = ${campaignId}
      ${s.countsMonth === null ? sql`` : sql`and q.counts_month = ${s.countsMonth} and q.${sql.raw(s.count)} > 0`}`,
  );
  const [row] = await ctx.db.execute<{ id: string }>(sql`
    select u.id from (${sql.join(branches, sql` union all `)}) u
    order by (-u.score), u.created_at, u.id collate "C" offset ${position} limit 1`);
  if (!row) throw new Error(`no participant at ${type} position ${position}`);
  return row.id;
}

async function boardSize(ctx: Ctx, campaignId: string, type: LeaderboardType): Promise<number> {
  const parts = sourcesOf(type, MONTH).map(
    (s) => sql`(select count(*)::int from ${participants} q where q.campaign_id = ${campaignId}
      ${s.countsMonth === null ? sql`` : sql`and q.counts_month = ${s.countsMonth} and q.${sql.raw(s.count)} > 0`})`,
  );
  const [row] = await ctx.db.execute<{ n: number }>(sql`select ${sql.join(parts, sql` + `)} as n`);
  return row!.n;
}

/** The "covering index only" strategy, for comparison: everyone ahead counted from the same index, no buckets. */
function aheadWithoutBuckets(campaignId: string, type: LeaderboardType, participantId: string): SQL {
  const me = sourcesOf(type, MONTH);
  const score =
    me.length === 1 && me[0]!.countsMonth === null
      ? sql.raw(`me.${me[0]!.count}`)
      : sql`(case ${sql.join(
          me.map((s) => sql`when me.counts_month = ${s.countsMonth} then me.${sql.raw(s.count)}`),
          sql` `,
        )} else 0 end)`;
  const parts = me.map(
    (s) => sql`(select count(*)::int from ${participants} q where q.campaign_id = me.campaign_id
      ${s.countsMonth === null ? sql`` : sql`and q.counts_month = ${s.countsMonth} and q.${sql.raw(s.count)} > 0`}
      and ((-q.${sql.raw(s.count)}), q.created_at, q.id collate "C") < (-${score}, me.created_at, me.id collate "C"))`,
  );
  return sql`select ${sql.join(parts, sql` + `)} as ahead from ${participants} me
    where me.id = ${participantId} and me.campaign_id = ${campaignId}`;
}

/** p50 and max of `RUNS` timed calls, after two untimed ones. */
async function time(work: () => Promise<unknown>): Promise<{ p50: number; max: number }> {
  for (let i = 0; i < 2; i++) await work();
  const ms: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const t = performance.now();
    await work();
    ms.push(performance.now() - t);
  }
  ms.sort((a, b) => a - b);
  return { p50: percentile(ms, 50)!, max: ms[ms.length - 1]! };
}

const fmt = (t: { p50: number; max: number }) => {
  const r = (n: number) => (n < 10 ? round(n, 2) : n < 100 ? round(n, 1) : round(n));
  return `${r(t.p50)} / ${r(t.max)}`;
};

type PlanNode = {
  'Node Type': string;
  'Index Name'?: string;
  'Relation Name'?: string;
  'Heap Fetches'?: number;
  Plans?: PlanNode[];
};

/** The scans of a statement's plan, run with EXPLAIN ANALYZE: each node type with its index or table. */
async function scans(ctx: Ctx, statement: SQL): Promise<string> {
  const [row] = await ctx.db.execute<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
    sql`explain (analyze, buffers, format json) ${statement}`,
  );
  const seen = new Map<string, number>();
  const walk = (n: PlanNode) => {
    if (n['Node Type'].endsWith('Scan') && n['Node Type'] !== 'Subquery Scan') {
      const on = n['Index Name'] ?? n['Relation Name'] ?? '';
      const fetches = n['Heap Fetches'] ? ` (${n['Heap Fetches']} heap fetches)` : '';
      const key = `${n['Node Type']} ${on}${fetches}`;
      seen.set(key, (seen.get(key) ?? 0) + 1);
    }
    for (const c of n.Plans ?? []) walk(c);
  };
  walk(row!['QUERY PLAN'][0].Plan);
  return [...seen].map(([k, n]) => (n > 1 ? `${k} ×${n}` : k)).join(', ');
}

async function measure(db: DbHandle) {
  const ctx: Ctx = { db: db.db, clock };
  const account = await createAccount(ctx, { name: 'Ranks bench', plan: 'ENTERPRISE' });
  const campaign = await createCampaign(ctx, account.id, { name: 'Big program', status: 'IN_PROGRESS' });
  const neighbour = await createCampaign(ctx, account.id, { name: 'Neighbour', status: 'IN_PROGRESS' });
  let t = performance.now();
  await seed(db, campaign.id, 'b', N);
  await seed(db, neighbour.id, 'n', Math.max(1, Math.floor(N / 10)));
  const seedS = (performance.now() - t) / 1000;
  t = performance.now();
  for (const c of [campaign.id, neighbour.id])
    await db.db.transaction((tx) => rebuildLeaderboardBuckets({ ...ctx, db: tx }, c));
  const bucketsS = (performance.now() - t) / 1000;
  await db.sql`vacuum analyze participants`;
  await db.sql`vacuum analyze leaderboard_buckets`;
  progress(
    `seeded ${N} + ${Math.floor(N / 10)} participants in ${round(seedS, 1)} s, buckets counted in ${round(bucketsS, 1)} s`,
  );

  const c = campaign.id;
  const rows: Record<string, Partial<Record<LeaderboardType, string>>> = {};
  const put = (what: string, type: LeaderboardType, value: string) => {
    rows[what] ??= {};
    rows[what]![type] = value;
  };
  const plans: string[] = [];
  const targets: Partial<Record<LeaderboardType, { best: string; middle: string; worst: string }>> = {};

  for (const type of LEADERBOARD_TYPES) {
    const size = await boardSize(ctx, c, type);
    put('participants on the leaderboard', type, size.toLocaleString('en'));
    const positions = { best: 0, middle: Math.floor(size / 2), worst: size - 1 };
    const ids = {
      best: await atPosition(ctx, c, type, positions.best),
      middle: await atPosition(ctx, c, type, positions.middle),
      worst: await atPosition(ctx, c, type, positions.worst),
    };
    targets[type] = ids;
    const [tie] = await db.db.execute<{ n: number }>(sql`
      select coalesce(max(participants), 0)::int as n from leaderboard_buckets
      where campaign_id = ${c} and board = ${type === 'ALL_TIME' ? 'ALL' : type === 'CURRENT_MONTH' ? MONTH : PREV}`);
    const [zero] = await db.db.execute<{ n: number }>(
      sql`select count(*)::int as n from participants where campaign_id = ${c} and loyalty_action_count = 0`,
    );
    put(
      'largest tie (participants with one count)',
      type,
      (type === 'ALL_TIME' ? Math.max(tie!.n, zero!.n) : tie!.n).toLocaleString('en'),
    );

    for (const which of ['best', 'middle', 'worst'] as const) {
      const got = await boardPosition(ctx, c, ids[which], type);
      if (got?.ahead !== positions[which]) {
        throw new Error(`${type} ${which}: rank ${got?.ahead} ahead, expected ${positions[which]}`);
      }
      put(
        `rank of the ${which}-ranked participant`,
        type,
        fmt(await time(() => boardPosition(ctx, c, ids[which], type))),
      );
    }
    const first = await leaderboardPage(ctx, c, { type, limit: PAGE });
    const lastFrom = await atPosition(ctx, c, type, Math.max(0, size - PAGE));
    for (const [what, nextId, rank] of [
      ['page of 20: the first', undefined, 1],
      ['page of 20: from the middle', ids.middle, positions.middle + 1],
      ['page of 20: the last', lastFrom, Math.max(0, size - PAGE) + 1],
    ] as const) {
      const page = await leaderboardPage(ctx, c, { type, limit: PAGE, nextId });
      const field =
        type === 'ALL_TIME' ? 'rank' : type === 'CURRENT_MONTH' ? 'monthlyRank' : 'prevMonthlyRank';
      if (page.participants[0]?.[field] !== rank)
        throw new Error(`${type} ${what}: starts at ${page.participants[0]?.[field]}`);
      put(what, type, fmt(await time(() => leaderboardPage(ctx, c, { type, limit: PAGE, nextId }))));
    }
    if (first.participants.length !== Math.min(PAGE, size)) throw new Error(`${type}: first page short`);
    for (const which of ['middle', 'worst'] as const) {
      const statement = aheadWithoutBuckets(c, type, ids[which]);
      const [check] = await db.db.execute<{ ahead: number }>(statement);
      if (check?.ahead !== positions[which])
        throw new Error(`${type} ${which} without buckets: ${check?.ahead}`);
      put(
        `without buckets: rank of the ${which}-ranked`,
        type,
        fmt(await time(() => db.db.execute(statement))),
      );
    }

    plans.push(`- ${type} rank (worst): ${await scans(ctx, positionQuery(c, ids.worst, type, MONTH))}`);
    const from = await boardPosition(ctx, c, ids.middle, type);
    plans.push(`- ${type} page (middle): ${await scans(ctx, pageIds(type, MONTH, c, from, PAGE + 1))}`);
    plans.push(
      `- ${type} without buckets (worst): ${await scans(ctx, aheadWithoutBuckets(c, type, ids.worst))}`,
    );
  }

  const threeRanks: string[] = [];
  for (const which of ['best', 'middle', 'worst'] as const) {
    const [p] = await db.db.select().from(participants).where(eq(participants.id, targets.ALL_TIME![which]));
    threeRanks.push(`${which} ${fmt(await time(() => participantRanks(ctx, p!)))}`);
    if (which === 'worst')
      plans.push(`- GET participant's three ranks (worst): ${await scans(ctx, ranksQuery(p!.id, MONTH))}`);
  }

  const [sizes] = await db.db.execute<Record<string, string>>(sql`
    select pg_size_pretty(pg_relation_size('participants')) as "table",
      pg_size_pretty(pg_relation_size('participants_rank_idx')) as "all-time index",
      pg_size_pretty(pg_relation_size('participants_monthly_rank_idx')) as "monthly index",
      pg_size_pretty(pg_relation_size('participants_prev_monthly_rank_idx')) as "previous-month index",
      pg_size_pretty(pg_total_relation_size('leaderboard_buckets')) as "buckets"`);

  const lines = [
    '',
    `### ${N.toLocaleString('en')} participants (\`npm run bench:ranks -- --participants ${N}\`)`,
    '',
    `${(await postgresVersion(benchAdminUrl())).split(' on ')[0]}, ${RUNS} runs after 2 warm-ups, milliseconds p50 / max, through the core ` +
      `services (a neighbour campaign holds ${Math.floor(N / 10).toLocaleString('en')} more participants). Seeded in ` +
      `${round(seedS, 1)} s, buckets counted in ${round(bucketsS, 1)} s.`,
    '',
    '| measured | ALL_TIME | CURRENT_MONTH | PREV_MONTH |',
    '| --- | --- | --- | --- |',
    ...Object.entries(rows).map(
      ([what, r]) => `| ${what} | ${LEADERBOARD_TYPES.map((t) => r[t] ?? '').join(' | ')} |`,
    ),
    '',
    `GET participant's three ranks (\`participantRanks\`, one statement), the ALL_TIME targets: ${threeRanks.join('; ')}.`,
    `Sizes: ${Object.entries(sizes!)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}.`,
    '',
    'Plans (EXPLAIN ANALYZE):',
    '',
    ...plans,
    '',
  ];
  console.log(lines.join('\n'));
}

withScratchDatabase('stampcard_ranks', (db) => measure(db)).catch((err: Error) => {
  console.error(err.stack ?? err.message);
  process.exitCode = 1;
});
