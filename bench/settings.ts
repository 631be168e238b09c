import { parseArgs } from 'node:util';

/** What one run measures, and how hard: `--quick` is the same run with smaller counts and durations. */
export type Settings = {
  mode: 'full' | 'quick';
  /** API processes, each on its own port; the load is split between them. */
  apiProcesses: number;
  /** Worker processes draining the apply backlog (and applying during the end-to-end run). */
  workers: number;
  /** Participants each campaign is seeded with; ingest requests cycle through them. */
  participants: number;
  ingest: { connections: number; warmupS: number; durationS: number };
  apply: { actions: number; baselineConnections: number };
  dispatch: { deliveries: number; concurrency: number };
  e2e: { rate: number; durationS: number; connections: number };
  /** How often each service process's memory is read, in ms. */
  rssSampleMs: number;
  /** The whole run is abandoned (and cleaned up) after this long, in ms. */
  deadlineMs: number;
};

const USAGE = 'usage: npm run bench -- [--quick] [--api-processes N] [--workers M]';

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
    apiProcesses: count('api-processes', values['api-processes'], 1),
    workers: count('workers', values.workers, 1),
    participants: 10_000,
    ingest: { connections: 32, warmupS: quick ? 1 : 3, durationS: quick ? 10 : 30 },
    // The worker's database pool holds 6 connections (scripts/stack.ts): the baseline gets as many.
    apply: { actions: quick ? 5_000 : 50_000, baselineConnections: 6 },
    dispatch: { deliveries: quick ? 2_000 : 20_000, concurrency: dispatcherConcurrency },
    e2e: { rate: 500, durationS: quick ? 10 : 30, connections: 64 },
    rssSampleMs: 250,
    deadlineMs: (quick ? 150 : 900) * 1000,
  };
}
