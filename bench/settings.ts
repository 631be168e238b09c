import { parseArgs } from 'node:util';

/** What one run measures, and how hard: `--quick` is the same run with smaller counts and durations. */
export type Settings = {
  mode: 'full' | 'quick';
  /** API processes, each on its own port; the load is split between them. */
  apiProcesses: number;
  /** Worker processes draining the apply backlog (and applying during the end-to-end run). */
  workers: number;
  /** Dispatcher processes delivering webhooks (the dispatch, end-to-end and storage figures). */
  dispatchers: number;
  /**
   * Run every role on a Redis Cluster the bench starts itself (three masters with a replica each, on loopback
   * ports, from the machine's `redis-server`) instead of `REDIS_URL`.
   */
  redisCluster: boolean;
  /** Participants each campaign is seeded with; ingest requests cycle through them. */
  participants: number;
  /** `serialRequests`: actions one caller sends one at a time (and five times as many for the stage table). */
  ingest: { connections: number; warmupS: number; durationS: number; serialRequests: number };
  /** `baselineConnections`: the connection counts the apply baseline is run at; the best counts. */
  apply: { actions: number; baselineConnections: number[] };
  dispatch: { deliveries: number; concurrency: number };
  /** `warmupS`: seconds at the same rate before the measured run, not counted. */
  e2e: { rate: number; durationS: number; connections: number; warmupS: number };
  /** The storage figure's load: every event of its actions goes to one endpoint. */
  storage: { rate: number; durationS: number };
  /** The figures to measure: every one unless `--only` names some. */
  only: FigureName[];
  /**
   * `--statements`: after each figure, the statements the run's database executed during it, from
   * `pg_stat_statements` (which PostgreSQL must preload; the run stops at once if it cannot be read).
   */
  statements: boolean;
  /** How often each service process's memory is read, in ms. */
  rssSampleMs: number;
  /** The whole run is abandoned (and cleaned up) after this long, in ms. */
  deadlineMs: number;
};

const USAGE =
  'usage: npm run bench -- [--quick] [--api-processes N] [--workers M] [--dispatchers D] [--redis-cluster] [--only ingest,apply,dispatch,e2e,ordered,storage] [--statements]';

/** The figures a run measures, in the order it measures them. */
export const FIGURES = ['ingest', 'apply', 'dispatch', 'e2e', 'ordered', 'storage'] as const;
export type FigureName = (typeof FIGURES)[number];

function count(name: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 16)
    throw new Error(`--${name} must be a whole number from 1 to 16\n${USAGE}`);
  return n;
}

export function readSettings(argv = process.argv.slice(2)): Settings {
  const { values } = parseArgs({
    args: argv,
    options: {
      quick: { type: 'boolean', default: false },
      'api-processes': { type: 'string' },
      workers: { type: 'string' },
      dispatchers: { type: 'string' },
      'redis-cluster': { type: 'boolean', default: false },
      only: { type: 'string' },
      statements: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
    strict: true,
  });
  if (values.help) {
    console.log(USAGE);
    process.exit(0);
  }
  const quick = values.quick === true;
  const dispatcherConcurrency = Number(process.env.DISPATCHER_CONCURRENCY || 64);
  return {
    mode: quick ? 'quick' : 'full',
    only: figuresOf(values.only),
    statements: values.statements === true,
    apiProcesses: count('api-processes', values['api-processes'], 1),
    workers: count('workers', values.workers, 1),
    dispatchers: count('dispatchers', values.dispatchers, 1),
    redisCluster: values['redis-cluster'] === true,
    participants: 10_000,
    ingest: {
      connections: 32,
      warmupS: quick ? 1 : 3,
      durationS: quick ? 10 : 30,
      serialRequests: quick ? 1_000 : 3_000,
    },
    // PostgreSQL's best at one transaction per action, whatever the worker's own pool size (6).
    apply: { actions: quick ? 5_000 : 50_000, baselineConnections: [2, 4, 8, 16, 32] },
    dispatch: { deliveries: quick ? 2_000 : 20_000, concurrency: dispatcherConcurrency },
    // `BENCH_E2E_RATE` runs it at another rate: to read its stages on a machine that cannot carry 1,000 a second.
    e2e: {
      rate: e2eRate(process.env.BENCH_E2E_RATE),
      durationS: quick ? 10 : 30,
      connections: 64,
      warmupS: quick ? 2 : 5,
    },
    // Each action adds a participant, a far slower write than an action alone (every new participant of an
    // account moves the account's and the campaign's counters, rows the worker's batches hold too): a rate the
    // two-core reference machine keeps up with, where 100 a second fell behind.
    storage: { rate: 50, durationS: quick ? 10 : 30 },
    rssSampleMs: 250,
    // A guard against a run that hangs, not a budget: a quick run took 130-200 s on a two-core machine whose bare
    // server answered 9,500 requests/s (it carried 450 actions/s end to end, so each rate figure ran twice as
    // long to send its actions and wait for their webhooks), and 200 s cut it off before its storage figure.
    deadlineMs: (quick ? 600 : 2400) * 1000,
  };
}

/** The end-to-end figure's rate, in actions a second: 1,000 (the issue's), or `BENCH_E2E_RATE`. */
export function e2eRate(raw: string | undefined): number {
  if (raw === undefined || raw === '') return 1_000;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 20_000)
    throw new Error(
      `BENCH_E2E_RATE must be a whole number of actions a second from 1 to 20000, not "${raw.slice(0, 20)}"`,
    );
  return n;
}

function figuresOf(raw: string | undefined): FigureName[] {
  if (raw === undefined) return [...FIGURES];
  const names = raw.split(',').map((n) => n.trim());
  for (const n of names) {
    if (!(FIGURES as readonly string[]).includes(n))
      throw new Error(`--only: unknown figure "${n}"\n${USAGE}`);
  }
  return FIGURES.filter((f) => names.includes(f));
}
