import type postgres from 'postgres';

/** Pino's levels from warn up, by name. */
const LEVELS: Record<number, string> = { 40: 'warn', 50: 'error', 60: 'fatal' };

/**
 * What went wrong in the service while the figures were measured: the lines its processes logged at warn or
 * above, counted per process, level and message (never the lines' other fields), and the deadlocks
 * PostgreSQL counted in the run's database. A figure measured while the service retried deadlocked statements
 * or failed jobs is not the figure of a healthy service: the run says so beside its figures.
 */
export type Health = {
  /** PostgreSQL's deadlocks in the run's database (`pg_stat_database`); null when it could not be read. */
  deadlocks: number | null;
  /** Log lines at warn or above: `<process> <level>: <msg>` → how many. */
  logLines: Record<string, number>;
};

const tally = new Map<string, number>();

/** Counts one line a service process wrote, when it is a pino line at warn or above. */
export function countLogLine(processName: string, line: string): void {
  if (!line.startsWith('{"level":')) return;
  const level = LEVELS[Number(line.slice(9, 11))];
  if (!level) return;
  let msg = '?';
  try {
    const parsed = JSON.parse(line) as { msg?: unknown };
    if (typeof parsed.msg === 'string') msg = parsed.msg.slice(0, 120);
  } catch {
    // A line cut short: counted without its message.
  }
  const key = `${processName} ${level}: ${msg}`;
  tally.set(key, (tally.get(key) ?? 0) + 1);
}

/** The run's health so far: the log lines counted, and the deadlocks of `database` read through `admin`. */
export async function healthOf(admin: postgres.Sql, database: string): Promise<Health> {
  let deadlocks: number | null = null;
  try {
    const [row] = await admin<{ deadlocks: string }[]>`
      select deadlocks::text from pg_stat_database where datname = ${database}`;
    deadlocks = row ? Number(row.deadlocks) : null;
  } catch {
    // Left unknown.
  }
  const logLines = Object.fromEntries([...tally].sort((a, b) => b[1] - a[1]));
  return { deadlocks, logLines };
}

/** One line for the terminal: "healthy", or what went wrong. */
export function healthLine(h: Health): string {
  const lines = Object.entries(h.logLines);
  if (h.deadlocks === 0 && lines.length === 0)
    return 'health: no deadlock, no service log line at warn or above';
  const parts = [`deadlocks in PostgreSQL: ${h.deadlocks ?? 'unknown'}`];
  const total = lines.reduce((n, [, c]) => n + c, 0);
  if (total > 0) {
    parts.push(
      `${total} service log line(s) at warn or above: ${lines
        .slice(0, 5)
        .map(([k, c]) => `${k} ×${c}`)
        .join('; ')}`,
    );
  }
  return `health: ${parts.join('; ')}`;
}
