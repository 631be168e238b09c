import { Gauge, type Registry } from 'prom-client';

/** What queue metrics read of a BullMQ queue (its `Queue`), so this package needs no BullMQ of its own. */
export type QueueLike = {
  name: string;
  getJobCounts(
    ...types: ('wait' | 'active' | 'delayed' | 'prioritized' | 'failed')[]
  ): Promise<Record<string, number>>;
  getJobs(
    types: ('wait' | 'active' | 'delayed')[],
    start?: number,
    end?: number,
    asc?: boolean,
  ): Promise<{ timestamp: number; delay?: number; processedOn?: number }[]>;
};

/** The states counted, by BullMQ's names; `completed` jobs are removed at once, so they are not among them. */
export const QUEUE_STATES = ['waiting', 'active', 'delayed', 'prioritized', 'failed'] as const;

export type QueueMetricsOptions = {
  /**
   * A scrape reuses the last reading for this long, in ms: however often `/metrics` is asked, the queues cost
   * Redis at most one round of reads per interval (one count and three one-job reads per queue).
   * @defaultValue 5000
   */
  cacheMs?: number;
  /** @defaultValue `Date.now` */
  now?: () => number;
};

/**
 * Queue depth and age, read from Redis when scraped: `stampcard_queue_jobs{queue,state}`, and
 * `stampcard_queue_oldest_job_age_seconds{queue,state}`: for `waiting`, how long the oldest waiting job has
 * been due; for `active`, how long the oldest running job has run; for `delayed`, how far past its time the
 * first delayed job is (0 while none is overdue; BullMQ moves due jobs to `waiting`, so anything above a few
 * seconds means no worker is promoting them). A queue Redis cannot read keeps its last values.
 */
export function queueMetrics(
  registry: Registry,
  queues: readonly QueueLike[],
  opts: QueueMetricsOptions = {},
) {
  const cacheMs = opts.cacheMs ?? 5000;
  const now = opts.now ?? Date.now;
  let readAt = Number.NEGATIVE_INFINITY;
  let reading: Promise<void> | null = null;
  // Read when scraped: prom-client awaits a metric's collect function before it writes the metric.
  const collect = async () => {
    if (performance.now() - readAt < cacheMs) return;
    reading ??= read().finally(() => {
      reading = null;
    });
    await reading;
  };
  const jobs = new Gauge({
    name: 'stampcard_queue_jobs',
    help: 'Jobs in each BullMQ queue, by state',
    labelNames: ['queue', 'state'] as const,
    registers: [registry],
    collect,
  });
  const age = new Gauge({
    name: 'stampcard_queue_oldest_job_age_seconds',
    help: 'Age of the oldest job of each queue and state: waiting since due, active since started, delayed past due; in seconds',
    labelNames: ['queue', 'state'] as const,
    registers: [registry],
    collect,
  });

  async function readQueue(q: QueueLike) {
    const [counts, [oldestWaiting], [oldestActive], [firstDelayed]] = await Promise.all([
      q.getJobCounts(...QUEUE_STATES.map((s) => (s === 'waiting' ? 'wait' : s))),
      q.getJobs(['wait'], 0, 0, true),
      q.getJobs(['active'], 0, 0, true),
      q.getJobs(['delayed'], 0, 0, true),
    ]);
    const t = now();
    for (const state of QUEUE_STATES) {
      jobs.set({ queue: q.name, state }, counts[state === 'waiting' ? 'wait' : state] ?? 0);
    }
    const due = (j: { timestamp: number; delay?: number }) => j.timestamp + (j.delay ?? 0);
    const seconds = (ms: number) => Math.max(0, ms) / 1000;
    age.set({ queue: q.name, state: 'waiting' }, oldestWaiting ? seconds(t - due(oldestWaiting)) : 0);
    age.set(
      { queue: q.name, state: 'active' },
      oldestActive ? seconds(t - (oldestActive.processedOn ?? oldestActive.timestamp)) : 0,
    );
    age.set({ queue: q.name, state: 'delayed' }, firstDelayed ? seconds(t - due(firstDelayed)) : 0);
  }

  async function read() {
    await Promise.allSettled(queues.map(readQueue));
    readAt = performance.now();
  }
}
