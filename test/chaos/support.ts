import { randomBytes } from 'node:crypto';
import { connectPostgres } from '@stampcard/db';
import type postgres from 'postgres';
import { afterAll } from 'vitest';
import { client, operatorProgram, overHttp } from '../support/client';
import { createTestDb, type TestDb } from '../support/db';
import { TEST_RATE_LIMITS } from '../support/factories';
import { freePort, type Run, startBuilt, waitForOutput } from '../support/processes';
import { deleteRedisKeys, queueSizesAt, REDIS_URL, uniquePrefix } from '../support/redis-keys';

/** The roles `dist/start.js` runs, and the line each logs once it is ready. */
const READY = {
  api: /Stampcard API listening/,
  worker: /worker and relay running/,
  dispatcher: /webhook dispatcher and sweep running/,
} as const;
export type Role = keyof typeof READY;

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A scenario's own stack: its database on the shared PostgreSQL (or on a cluster of its own), its own queue
 * prefix, and each role a process of its own running the build (`dist/start.js <role>`), so that a scenario can
 * kill, stop and start any of them. Closed after the file's tests, with its keys and database.
 */
export type ChaosStack = {
  readonly baseUrl: string;
  readonly token: string;
  readonly prefix: string;
  readonly databaseUrl: string;
  /** The Redis its roles use (a scenario's own, or the shared one). */
  readonly redisUrl: string;
  /** A connection of the scenario's own to its database, for the checks. */
  readonly sql: postgres.Sql;
  /** Starts a process of `role` and waits until it is ready; answers its handle. */
  start(role: Role, env?: Record<string, string>): Promise<Run>;
  /** Every process of the role still running. */
  running(role: Role): Run[];
  /** SIGKILL, at once: no cleanup, no graceful stop. */
  kill(run: Run): Promise<void>;
  /** Every process started and still running, by role. */
  all(): Run[];
  /** Every process started, running or not, in the order they started. */
  started(): Run[];
};

export function useChaosStack(
  opts: { databaseUrl?: () => string; redisUrl?: () => string; env?: Record<string, string> } = {},
) {
  const token = `op_${randomBytes(16).toString('hex')}`;
  const prefix = uniquePrefix('stampcard_chaos');
  const started: { role: Role; run: Run }[] = [];
  // Whatever becomes of the hooks (a file's worker ended early), no role outlives the test process.
  process.once('exit', () => {
    for (const { run } of started) if (run.child.exitCode === null) run.child.kill('SIGKILL');
  });
  let db: TestDb | undefined;
  let sql: postgres.Sql | undefined;
  let port = 0;
  let databaseUrl = '';
  const redisUrl = () => opts.redisUrl?.() ?? REDIS_URL;

  const envOf = (role: Role, extra: Record<string, string>): Record<string, string> => ({
    DATABASE_URL: databaseUrl,
    REDIS_URL: redisUrl(),
    QUEUE_PREFIX: prefix,
    OPERATOR_TOKEN: token,
    HOST: '127.0.0.1',
    PORT: String(port),
    NODE_ENV: 'test',
    LOG_LEVEL: 'info',
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    // A killed worker's jobs come back within about 1.5 locks.
    WORKER_LOCK_MS: '2000',
    RELAY_INTERVAL_MS: '1000',
    RELAY_GRACE_MS: '2000',
    DISPATCH_SWEEP_MS: '500',
    ...opts.env,
    ...extra,
    ...(role === 'api' ? {} : {}),
  });

  const stack: ChaosStack = {
    get baseUrl() {
      return `http://127.0.0.1:${port}`;
    },
    token,
    prefix,
    get databaseUrl() {
      return databaseUrl;
    },
    get redisUrl() {
      return redisUrl();
    },
    get sql() {
      if (!sql) {
        sql = connectPostgres(databaseUrl, { max: 2, onnotice: () => {}, connect_timeout: 5 });
      }
      return sql;
    },
    async start(role, env = {}) {
      if (!databaseUrl) {
        if (opts.databaseUrl) databaseUrl = opts.databaseUrl();
        else {
          db = await createTestDb();
          databaseUrl = db.url;
        }
        port = await freePort();
      }
      const run = startBuilt(envOf(role, env), ['dist/start.js', role]);
      started.push({ role, run });
      await waitForOutput(run, READY[role], 60_000);
      return run;
    },
    running: (role) =>
      started
        .filter((s) => s.role === role && s.run.child.exitCode === null && s.run.child.signalCode === null)
        .map((s) => s.run),
    async kill(run) {
      if (run.child.exitCode !== null || run.child.signalCode !== null) return;
      run.child.kill('SIGKILL');
      await run.exited;
    },
    all: () =>
      started
        .filter((s) => s.run.child.exitCode === null && s.run.child.signalCode === null)
        .map((s) => s.run),
    started: () => started.map((s) => s.run),
  };

  afterAll(async () => {
    for (const run of stack.all()) run.child.kill('SIGKILL');
    await Promise.all(started.map((s) => s.run.exited));
    await sql?.end({ timeout: 1 });
    await deleteRedisKeys(redisUrl(), prefix).catch(() => 0);
    await db?.drop();
  }, 60_000);
  return stack;
}

/** A program made through the operator API of the stack: an account (limits out of the way), a campaign, a reward. */
export async function chaosProgram(stack: ChaosStack, reward: Record<string, unknown> = {}) {
  const op = client(overHttp(stack.baseUrl), stack.token);
  const p = await operatorProgram(op, {
    rateLimits: {
      ...TEST_RATE_LIMITS,
      second: 1_000_000,
      minute: 1_000_000,
      hour: 10_000_000,
      concurrency: 10_000,
      slowdownAfter: 0,
    },
    reward,
  });
  return { ...p, op, api: client(overHttp(stack.baseUrl), p.key) };
}

export type LoadResult = {
  /** Ids of the actions answered 2xx, or 503 with `outcome: "LANDED"` (written, the answer late). */
  accepted: string[];
  /** Actions a 503 with `outcome: "UNKNOWN"` named: recorded or not, the caller must look them up. */
  uncertain: string[];
  /** Answers by status (or by the error of a request that got none), and the slowest of each. */
  answers: Map<string, { count: number; maxMs: number }>;
};

/**
 * Sends `total` loyalty actions, `concurrency` at a time, each for one of `participants` emails, each request
 * bounded by a timeout (10 s unless `timeoutMs` says otherwise); `during` runs beside the load (the scenario's faults) and is awaited too.
 */
export async function load(
  stack: ChaosStack,
  target: { key: string; campaignId: string; rewardId: string },
  opts: {
    total: number;
    concurrency: number;
    participants: number;
    during?: (progress: () => number) => Promise<void>;
    /** Ends the load early once it answers true (a load bounded by its scenario's time rather than a count). */
    stop?: () => boolean;
    /** A pause after each request of a lane, to hold a steady rate rather than the most the API takes. */
    pauseMs?: number;
    /** Told of every answer (its status, or the error of a request that got none) and how long it took. */
    onAnswer?: (what: string, ms: number) => void;
    /**
     * Written into each request's metadata beside `n`: a second load on the same program sends requests of its
     * own, never one identical to a request of the first still QUEUED (which is a 409 by design).
     */
    tag?: string;
    /**
     * Longest one request waits for its answer, in ms: past it the request counts as an error (`TimeoutError`),
     * and an action it may have written is unknown to the caller.
     * @defaultValue 10000
     */
    timeoutMs?: number;
  },
): Promise<LoadResult> {
  const accepted: string[] = [];
  const uncertain: string[] = [];
  const answers = new Map<string, { count: number; maxMs: number }>();
  const note = (what: string, ms: number) => {
    opts.onAnswer?.(what, ms);
    const a = answers.get(what) ?? { count: 0, maxMs: 0 };
    answers.set(what, { count: a.count + 1, maxMs: Math.max(a.maxMs, Math.round(ms)) });
  };
  const url = `${stack.baseUrl}/v1/campaign/${target.campaignId}/loyalty-action`;
  let next = 0;
  let done = 0;
  const one = async (i: number) => {
    const started = performance.now();
    try {
      const res = await fetch(url, {
        method: 'POST',
        headers: { authorization: `Bearer ${target.key}`, 'content-type': 'application/json' },
        // Each request its own (`metadata.n`): an identical one in flight would be refused 409 by design.
        body: JSON.stringify({
          participantEmail: `p${i % opts.participants}@chaos.test`,
          rewardId: target.rewardId,
          metadata: opts.tag ? { n: i, load: opts.tag } : { n: i },
        }),
        signal: AbortSignal.timeout(opts.timeoutMs ?? 10_000),
      });
      const body = (await res.json().catch(() => null)) as {
        action?: { id: string };
        outcome?: string;
        actionId?: string;
      } | null;
      if (res.status >= 200 && res.status < 300 && body?.action?.id) accepted.push(body.action.id);
      // A 503 that says its write landed names it: the action is the user's as much as a 2xx one.
      else if (res.status === 503 && body?.outcome === 'LANDED' && body.actionId)
        accepted.push(body.actionId);
      // One whose COMMIT went unanswered may or may not be recorded: the caller is told to look it up.
      else if (res.status === 503 && body?.outcome === 'UNKNOWN' && body.actionId)
        uncertain.push(body.actionId);
      note(
        res.status === 503 && body?.outcome ? `503 ${body.outcome}` : String(res.status),
        performance.now() - started,
      );
    } catch (err) {
      note((err as Error).name, performance.now() - started);
    } finally {
      done++;
    }
  };
  const lane = async () => {
    while (next < opts.total && !opts.stop?.()) {
      await one(next++);
      if (opts.pauseMs) await sleep(opts.pauseMs);
    }
  };
  await Promise.all([
    ...Array.from({ length: opts.concurrency }, lane),
    opts.during?.(() => done / opts.total) ?? Promise.resolve(),
  ]);
  return { accepted, uncertain, answers };
}

/**
 * Waits until `check` answers true, up to `ms`; answers how long it took. Past `ms` it throws, with what `explain`
 * finds (the state a scenario was stuck in, e.g. {@link whyStuck}) in the error's message.
 */
export async function until(
  check: () => Promise<boolean>,
  ms: number,
  what: string,
  explain?: () => Promise<string>,
): Promise<number> {
  const started = performance.now();
  for (;;) {
    if (await check()) return Math.round(performance.now() - started);
    if (performance.now() - started > ms) {
      const why = explain ? await explain().catch((err: Error) => `(explain failed: ${err.message})`) : '';
      throw new Error(`${what}: not within ${ms} ms${why ? `\n${why}` : ''}`);
    }
    await sleep(200);
  }
}

/**
 * What a scenario whose actions stay QUEUED was stuck in, for the error of its wait: the QUEUED rows (how many,
 * the oldest's age, when the last was applied), the stack's keys in Redis by type and size (a queue's waiting,
 * active, delayed jobs), and the last lines each role logged, a role that exited included.
 */
export async function whyStuck(stack: ChaosStack, campaignId: string): Promise<string> {
  const [ledger] = await stack.sql<
    { queued: number; oldestS: number | null; lastAppliedS: number | null; applied: number }[]
  >`
    select count(*) filter (where status = 'QUEUED')::int as queued,
      extract(epoch from now() - min(created_at) filter (where status = 'QUEUED'))::float8 as "oldestS",
      extract(epoch from now() - max(applied_at))::float8 as "lastAppliedS",
      count(*) filter (where status = 'APPLIED')::int as applied
    from loyalty_actions where campaign_id = ${campaignId}`;
  const lines = [`ledger: ${JSON.stringify(ledger)}`];
  lines.push(`redis: ${await queueSizesAt(stack.redisUrl, stack.prefix)}`);
  // Each role's last lines other than its access log: reconnections, errors, the relay's work. A role that exited
  // by itself is named with its code and its last lines (nothing restarts it here, as a container runtime would);
  // one the scenario killed, with its signal alone.
  for (const run of stack.started()) {
    const { exitCode, signalCode, pid } = run.child;
    const role = run.child.spawnargs.at(-1);
    if (signalCode !== null) {
      lines.push(`--- ${role} (pid ${pid}), ended by ${signalCode}`);
      continue;
    }
    const logged = run
      .output()
      .split('\n')
      .filter((l) => l && !l.includes('"msg":"request"'));
    const state = exitCode === null ? 'running' : `EXITED with code ${exitCode}`;
    lines.push(`--- ${role} (pid ${pid}, ${state}), last lines:`, ...logged.slice(-15));
  }
  return lines.join('\n');
}

export type LedgerFigures = {
  accepted: number;
  applied: number;
  lost: number;
  doubled: number;
  /** In the ledger, but neither accepted nor named by an UNKNOWN answer: an answer that lied. */
  unknown: number;
  /** Named by an UNKNOWN answer and in the ledger (the others were not recorded). */
  uncertainRecorded: number;
  /** Ledger rows of the campaign still QUEUED: work some process left behind. */
  queued: number;
};

/**
 * The ledger against the answers and the counters: every accepted action in the ledger and APPLIED (`lost`
 * counts the others), no action the API did not answer for (`unknown`: in the ledger, neither accepted nor
 * named by a 503 whose outcome is UNKNOWN), and
 * each participant's count equal to the applied rows of its ledger (`doubled` counts the participants whose
 * counter is off).
 */
export async function ledgerFigures(
  sql: postgres.Sql,
  campaignId: string,
  accepted: string[],
  uncertain: string[] = [],
): Promise<LedgerFigures> {
  const [applied] = await sql<{ n: number }[]>`
    select count(*)::int as n from loyalty_actions where id = any(${accepted}) and status = 'APPLIED'`;
  const [unknown] = await sql<{ n: number; uncertain: number }[]>`
    select count(*) filter (where not (id = any(${uncertain})))::int as n,
      count(*) filter (where id = any(${uncertain}))::int as uncertain
    from loyalty_actions where campaign_id = ${campaignId} and not (id = any(${accepted}))`;
  const [queued] = await sql<{ n: number }[]>`
    select count(*)::int as n from loyalty_actions where campaign_id = ${campaignId} and status = 'QUEUED'`;
  const [doubled] = await sql<{ n: number }[]>`
    select count(*)::int as n from participants p
    where p.campaign_id = ${campaignId} and p.loyalty_action_count <> (
      select count(*) from loyalty_actions a where a.participant_id = p.id and a.status = 'APPLIED')`;
  return {
    accepted: accepted.length,
    applied: applied!.n,
    lost: accepted.length - applied!.n,
    doubled: doubled!.n,
    unknown: unknown!.n,
    uncertainRecorded: unknown!.uncertain,
    queued: queued!.n,
  };
}

/** One line per scenario, for the log and for the README's Reliability section. */
export function report(scenario: string, figures: Record<string, unknown>) {
  const line = Object.entries(figures)
    .map(([k, v]) => `${k}=${v instanceof Map ? JSON.stringify(Object.fromEntries(v)) : String(v)}`)
    .join(' ');
  console.info(`chaos ${scenario}: ${line}`);
}

/** The console's pages an operator keeps open: the overview, the webhooks, the participants, the programs. */
export const CONSOLE_PAGES = ['/console', '/console/webhooks', '/console/participants', '/console/programs'];

/**
 * Asks for every console page at once with a signed-in session (`cookie`), 10 s at most each: answers each
 * page's status
 * (or the error of a request that got none) and how long it took.
 */
export async function probeConsole(stack: ChaosStack, cookie: string) {
  return Promise.all(
    CONSOLE_PAGES.map(async (page) => {
      const started = performance.now();
      const res = await fetch(`${stack.baseUrl}${page}`, {
        headers: { cookie },
        redirect: 'manual',
        signal: AbortSignal.timeout(10_000),
      })
        .then(async (r) => {
          await r.arrayBuffer();
          return String(r.status);
        })
        .catch((err: Error) => err.name);
      return { page, status: res, ms: Math.round(performance.now() - started) };
    }),
  );
}
