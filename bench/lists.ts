import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import {
  type Ctx,
  createAccount,
  createCampaign,
  createEndpoint,
  endpointsWithHealth,
  getMessage,
  listMessages,
  listParticipants,
  manualClock,
  messageBody,
} from '@stampcard/core';
import type { DbHandle } from '@stampcard/db';
import { withScratchDatabase } from './database';
import { percentile, progress, round } from './util';

/**
 * The console's and the portal's lists on a large database: one endpoint with a million messages (each with an
 * event about one of 100,000 participants, and an attempt), a campaign of a million participants. Each list
 * is read `--runs` times; the script prints p50 and max per list and fails when a p50 passes 200 ms.
 */
const USAGE =
  'usage: npm run bench:lists -- [--messages N (10000..10000000, default 1000000)] [--runs R (default 15)]';
const { values } = parseArgs({
  args: process.argv.slice(2),
  options: { messages: { type: 'string' }, runs: { type: 'string' }, help: { type: 'boolean' } },
  strict: true,
});
if (values.help) {
  console.log(USAGE);
  process.exit(0);
}
const N = Number(values.messages ?? 1_000_000);
const RUNS = Number(values.runs ?? 15);
if (
  !Number.isInteger(N) ||
  N < 10_000 ||
  N > 10_000_000 ||
  !Number.isInteger(RUNS) ||
  RUNS < 1 ||
  RUNS > 1000
) {
  console.error(USAGE);
  process.exit(2);
}
/** What a list must answer within, at its median. */
const BUDGET_MS = 200;
const PAGE = 25;
const clock = manualClock('2026-06-30T12:00:00Z');
const DAY = 86_400_000;

/** `n` events and their messages (and one attempt each) for one endpoint, over the last 30 days, in one go. */
async function seedMessages(db: DbHandle, campaignId: string, endpointId: string, n: number) {
  const now = clock.now().toISOString();
  await db.sql.begin(async (tx) => {
    await tx`select setseed(0.5)`;
    await tx`
      insert into events (id, campaign_id, type, data, created_at, dispatched_at)
      select 'evt_' || lpad(g::text, 12, '0'), ${campaignId},
        (array['LOYALTY_ACTION_APPLIED','PARTICIPANT_UPDATED','PARTICIPANT_REACHED_A_GOAL'])[1 + g % 3],
        jsonb_build_object('participant', jsonb_build_object('id', 'pt_' || lpad((g % 100000)::text, 9, '0'))),
        ${now}::timestamptz - (g::float / ${n} * interval '30 days'),
        ${now}::timestamptz
      from generate_series(1, ${n}) g`;
    await tx`
      insert into webhook_messages (id, endpoint_id, campaign_id, event_id, event_type, status, attempts,
        next_attempt_at, last_status_code, created_at, updated_at, succeeded_at)
      select 'msg_' || substr(e.id, 5), ${endpointId}, ${campaignId}, e.id, e.type,
        case when r < 0.90 then 'SUCCEEDED' when r < 0.98 then 'FAILED' else 'PENDING' end,
        1, e.created_at, case when r < 0.90 then 200 else 500 end, e.created_at, e.created_at,
        case when r < 0.90 then e.created_at end
      from (select *, random() as r from events where campaign_id = ${campaignId}) e`;
    await tx`
      insert into webhook_attempts (id, message_id, endpoint_id, attempted_at, status_code, latency_ms,
        response_excerpt, error_class, succeeded)
      select 'att_' || substr(m.id, 5), m.id, m.endpoint_id, m.created_at, m.last_status_code, 12,
        case when m.status = 'SUCCEEDED' then 'ok' else 'server error' end,
        case when m.status = 'SUCCEEDED' then null else 'HTTP_STATUS' end, m.status = 'SUCCEEDED'
      from webhook_messages m where m.endpoint_id = ${endpointId}`;
  });
}

/** `n` participants with names, a tenth of them winners and a twentieth HIGH risk. */
async function seedParticipants(db: DbHandle, campaignId: string, n: number) {
  const first = ['ada', 'grace', 'alan', 'edsger', 'barbara', 'donald', 'margaret', 'ken', 'linus', 'radia'];
  const last = [
    'lovelace',
    'hopper',
    'turing',
    'dijkstra',
    'liskov',
    'knuth',
    'hamilton',
    'thompson',
    'torvalds',
    'perlman',
  ];
  const now = clock.now().toISOString();
  await db.sql`
    insert into participants (id, campaign_id, email, email_key, first_name, last_name, fraud_risk_level,
      approved_reward_count, counts_month, loyalty_action_source, created_at, updated_at)
    select 'pt_' || lpad(g::text, 9, '0'), ${campaignId},
      (${first}::text[])[1 + g % 10] || '.' || g || '@example.com',
      (${first}::text[])[1 + g % 10] || '.' || g || '@example.com',
      initcap((${first}::text[])[1 + g % 10]), initcap((${last}::text[])[1 + (g / 10) % 10]),
      case when g % 20 = 0 then 'HIGH' else 'LOW' end, case when g % 10 = 0 then 1 else 0 end,
      '2026-06', 'API', ${now}::timestamptz - (g || ' seconds')::interval, ${now}::timestamptz
    from generate_series(1, ${n}) g`;
}

async function time(run: () => Promise<unknown>) {
  const ms: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const t = performance.now();
    await run();
    ms.push(performance.now() - t);
  }
  ms.sort((a, b) => a - b);
  return { p50: percentile(ms, 50)!, max: ms.at(-1)! };
}

async function measure(db: DbHandle) {
  const ctx: Ctx = { db: db.db, clock };
  const account = await createAccount(ctx, { name: 'Lists bench', plan: 'ENTERPRISE' });
  const campaign = await createCampaign(ctx, account.id, { name: 'Big program', status: 'IN_PROGRESS' });
  const opts = { allowPrivateNetworks: true };
  const busy = await createEndpoint(ctx, campaign.id, { url: 'http://127.0.0.1:9/busy' }, opts);
  await createEndpoint(ctx, campaign.id, { url: 'http://127.0.0.1:9/quiet' }, opts);
  let t = performance.now();
  await seedMessages(db, campaign.id, busy.id, N);
  progress(
    `seeded ${N.toLocaleString('en')} events, messages and attempts in ${round((performance.now() - t) / 1000, 1)} s`,
  );
  t = performance.now();
  await seedParticipants(db, campaign.id, N);
  progress(`seeded ${N.toLocaleString('en')} participants in ${round((performance.now() - t) / 1000, 1)} s`);
  for (const table of ['events', 'webhook_messages', 'webhook_attempts', 'participants']) {
    await db.sql.unsafe(`vacuum analyze ${table}`);
  }

  const first = await listMessages(ctx, busy.id, { limit: PAGE });
  const middleId = `msg_${String(Math.floor(N / 2)).padStart(12, '0')}`;
  const dayAgo = clock.now().getTime() - DAY;
  const lists: [string, () => Promise<unknown>][] = [
    [
      'endpoints of the account, with 24 h health',
      () => endpointsWithHealth(ctx, { accountId: account.id }, { limit: PAGE }),
    ],
    ['messages: first page', () => listMessages(ctx, busy.id, { limit: PAGE })],
    ['messages: a page from the middle', () => listMessages(ctx, busy.id, { limit: PAGE, after: middleId })],
    ['messages: FAILED', () => listMessages(ctx, busy.id, { limit: PAGE, status: 'FAILED' })],
    ['messages: PENDING', () => listMessages(ctx, busy.id, { limit: PAGE, status: 'PENDING' })],
    [
      'messages: one event type',
      () => listMessages(ctx, busy.id, { limit: PAGE, eventType: 'PARTICIPANT_REACHED_A_GOAL' }),
    ],
    [
      'messages: one participant',
      () => listMessages(ctx, busy.id, { limit: PAGE, participantId: 'pt_000012345' }),
    ],
    [
      'messages: a day, 10 days ago',
      () => listMessages(ctx, busy.id, { limit: PAGE, since: dayAgo - 10 * DAY, until: dayAgo - 9 * DAY }),
    ],
    [
      'message with attempts and body',
      () => Promise.all([getMessage(ctx, first.messages[0]!.id), messageBody(ctx, first.messages[0]!.id)]),
    ],
    ['participants: first page', () => listParticipants(ctx, campaign.id, { limit: PAGE })],
    [
      'participants: search an email prefix',
      () => listParticipants(ctx, campaign.id, { limit: PAGE, search: 'grace.12' }),
    ],
    [
      'participants: search a last name',
      () => listParticipants(ctx, campaign.id, { limit: PAGE, search: 'Knuth' }),
    ],
    [
      'participants: HIGH risk',
      () => listParticipants(ctx, campaign.id, { limit: PAGE, fraudRiskLevel: 'HIGH' }),
    ],
    ['participants: winners', () => listParticipants(ctx, campaign.id, { limit: PAGE, isWinner: true })],
  ];
  const rows: string[] = [];
  let over = 0;
  for (const [what, run] of lists) {
    await run();
    const { p50, max } = await time(run);
    if (p50 > BUDGET_MS) over++;
    rows.push(`| ${what} | ${round(p50, 1)} | ${round(max, 1)} |${p50 > BUDGET_MS ? ' **over**' : ''}`);
  }
  console.log(`\n${N.toLocaleString('en')} messages and participants, ${RUNS} runs each (ms)\n`);
  console.log('| list | p50 | max |');
  console.log('| --- | ---: | ---: |');
  for (const row of rows) console.log(row);
  if (over > 0) {
    console.error(`\n${over} list(s) over ${BUDGET_MS} ms at the median`);
    process.exitCode = 1;
  }
}

withScratchDatabase('stampcard_lists', (db) => measure(db)).catch((err: Error) => {
  console.error(err.stack ?? err.message);
  process.exitCode = 1;
});
