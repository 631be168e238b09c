import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { isReadyMessage, SUPERVISED } from '../scripts/supervisor';
import { countLogLine } from './health';
import { HeapSampler } from './heap';
import { sleep, until } from './util';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));

export type Role = 'api' | 'worker' | 'dispatcher';

export type ServiceProcess = {
  /** `api1`, `worker1`, `dispatcher1`… */
  name: string;
  role: Role;
  child: ChildProcess;
  pid: number;
  port: number | null;
  /** Highest resident set size seen, in kB: the kernel's high-water mark (VmHWM) and the 250 ms samples. */
  peakRssKb: number;
  /** Highest RSS sampled during each phase of the run, in kB. */
  rssKbByPhase: Record<string, number>;
  /** CPU time (user + system, clock ticks) and wall time (ms) at the first and last sample of each phase. */
  cpuByPhase: Record<string, { ticks0: number; at0: number; ticks: number; at: number }>;
  /** Set before the bench stops it: its exit is then expected. */
  stopping: boolean;
  /** With `BENCH_HEAP_PROF`: what it allocates, phase by phase (`HeapSampler`), and the phase being sampled. */
  heap: { sampler: HeapSampler; phase: string; bytesByPhase: Record<string, number> } | null;
};

export type ProcessMemory = {
  name: string;
  role: Role;
  /** The process's peak resident set size (kernel high-water mark, VmHWM, and the samples). */
  peakRssMb: number;
  /** The highest RSS sampled (every 250 ms) during each phase. */
  sampledRssMbByPhase: Record<string, number>;
  /** The CPU it used during each phase, in % of one core, from its first sample in the phase to its last. */
  cpuPercentByPhase: Record<string, number>;
  /**
   * With `BENCH_HEAP_PROF` naming its role: the MB it allocated during each phase, garbage included (V8's
   * sampling heap profiler: an estimate, within a few per cent over hundreds of MB).
   */
  allocatedMbByPhase?: Record<string, number>;
};

/** A free TCP port on loopback. */
export async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const { port } = srv.address() as { port: number };
  await new Promise((resolve) => srv.close(resolve));
  return port;
}

/**
 * `node --conditions=@stampcard/source --import tsx <args>` (the sources, workspace packages' too) from the
 * repository root, with `env` on top of this process's environment.
 * Its output goes to this process's stderr, each line prefixed with `name`; its lines at warn or above are
 * counted for the run's health (`countLogLine`).
 */
export function spawnNode(
  name: string,
  args: string[],
  env: Record<string, string>,
  /** With an IPC channel, over which a role started as `npm start` starts it says when it is ready. */
  ipc = false,
): ChildProcess {
  const child = spawn(process.execPath, ['--conditions=@stampcard/source', '--import', 'tsx', ...args], {
    cwd: ROOT,
    // No metrics listener unless asked for: several roles run on one machine.
    env: { ...process.env, METRICS_PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe', ...(ipc ? (['ipc'] as const) : [])],
  });
  for (const stream of [child.stdout, child.stderr]) {
    if (stream)
      createInterface({ input: stream }).on('line', (line) => {
        countLogLine(name, line);
        process.stderr.write(`[${name}] ${line}\n`);
      });
  }
  return child;
}

/** Resolves once `child` sends its ready message; rejects when it exits first or `timeoutMs` passes. */
function readyOf(child: ChildProcess, name: string, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => finish(new Error(`${name} was not ready within ${timeoutMs} ms`)),
      timeoutMs,
    );
    const onMessage = (m: unknown) => isReadyMessage(m) && finish();
    const onExit = (code: number | null) => finish(new Error(`${name} exited (${code}) before it was ready`));
    function finish(err?: Error) {
      clearTimeout(timer);
      child.off('message', onMessage).off('exit', onExit);
      if (err) reject(err);
      else resolve();
    }
    child.on('message', onMessage).once('exit', onExit);
  });
}

/** Resolves with the exit code once `child` has exited (at once when it already has). */
export function exited(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

/** SIGTERM, then SIGKILL when it has not exited within `graceMs`. */
export async function stopChild(child: ChildProcess, graceMs = 10_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const done = exited(child);
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await done;
  clearTimeout(timer);
}

/** CPU time used so far (user + system), in clock ticks (`/proc/<pid>/stat`); null without /proc. */
async function cpuTicksOf(pid: number): Promise<number | null> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    // The fields after the command name (which may hold spaces), from the third on: utime is 14th, stime 15th.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return null;
  }
}

/** The machine's CPU time so far over every core, busy and in all, in clock ticks, and its cores (`/proc/stat`). */
export type MachineTicks = { busy: number; total: number; cores: number };

/** Reads `MachineTicks`; null without `/proc/stat`. */
export async function machineTicks(): Promise<MachineTicks | null> {
  try {
    const lines = (await readFile('/proc/stat', 'utf8')).split('\n');
    // user nice system idle iowait irq softirq steal (guest time is counted in user already).
    const t = lines[0]!.split(/\s+/).slice(1, 9).map(Number);
    if (t.length < 8 || t.some((n) => !Number.isFinite(n))) return null;
    const total = t.reduce((a, b) => a + b, 0);
    const cores = lines.filter((l) => /^cpu\d+ /.test(l)).length;
    return { busy: total - t[3]! - t[4]!, total, cores };
  } catch {
    return null;
  }
}

/**
 * How busy the whole machine was between two `machineTicks` readings, in % of one core (200 for two cores that
 * never rested: every process, the stores and the bench's own load included); null without `/proc`.
 */
export function machineBusyPercent(from: MachineTicks | null, to: MachineTicks | null): number | null {
  if (!from || !to || to.total <= from.total) return null;
  return Math.round(((to.busy - from.busy) / (to.total - from.total)) * 100 * to.cores);
}

/** Clock ticks per second of `/proc/<pid>/stat`'s times (USER_HZ): 100 on Linux. */
const TICKS_PER_SECOND = 100;

/** Resident set size now and its high-water mark, in kB; null once the process is gone. */
async function memoryOf(pid: number): Promise<{ rss: number; hwm: number } | null> {
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? 0);
    return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
  } catch {
    // No /proc (macOS): ps answers the current RSS only.
    return new Promise((resolve) =>
      execFile('ps', ['-o', 'rss=', '-p', String(pid)], (err, out) => {
        const rss = Number(out.trim());
        resolve(err || !rss ? null : { rss, hwm: rss });
      }),
    );
  }
}

/** GET `url` until it answers 200; each try bounded. */
export async function waitHttpOk(url: string, timeoutMs: number, alive: () => void): Promise<void> {
  await until(`${url} to answer 200`, timeoutMs, async () => {
    alive();
    try {
      const res = await request(url, { headersTimeout: 2000, bodyTimeout: 2000 });
      await res.body.dump();
      return res.statusCode === 200;
    } catch {
      return false;
    }
  });
}

/** The V8 old-space cap every service process runs with (package.json's start scripts, docker-compose.yml). */
export const HEAP_CAP = '--max-old-space-size=160';

/**
 * `BENCH_HEAP_PROF=api,worker,dispatcher` (any of them) runs those roles with the inspector on a loopback port of
 * their own and samples what they allocate, phase by phase (`HeapSampler`): `allocatedMbByPhase` in the results
 * file, the profiles in `bench/results/profiles/<name>/<phase>.heapprofile`, and the report's KB per request the
 * API answered in the ingest phase. The inspector and the sampling slow a process a little: read the other figures
 * of such a run with that in mind.
 */
const heapProfiled = (role: Role) => rolesIn('BENCH_HEAP_PROF').includes(role);

/** The roles an environment variable lists (`api,worker,dispatcher`, any of them). */
const rolesIn = (variable: string) => (process.env[variable] ?? '').split(',').map((r) => r.trim());

/**
 * `BENCH_NODE_FLAGS='api:--trace-gc --trace-gc-nvp,worker:…'`: Node.js or V8 flags for the processes of a role
 * (spaces between a role's flags, commas between roles), for a question the figures do not answer, such as how
 * often a role collects its heap. What they print goes to the bench's output with the role's other lines.
 */
function nodeFlags(role: Role): string[] {
  const entry = (process.env.BENCH_NODE_FLAGS ?? '')
    .split(',')
    .map((part) => part.trim())
    .find((part) => part.startsWith(`${role}:`));
  return entry
    ? entry
        .slice(role.length + 1)
        .split(/\s+/)
        .filter(Boolean)
    : [];
}

/**
 * `BENCH_CPU_PROF=api,worker,dispatcher` (any of them) runs those roles under `node --cpu-prof`: when it stops,
 * each process writes its profiles to `bench/results/profiles/<name>/` (api1, worker1, dispatcher1…): the
 * largest file is the main thread, the small one tsx's loader thread. Open them in Chrome DevTools or speedscope.
 * `BENCH_CPU_PROF_INTERVAL_US` samples more often than V8's 1,000 µs (100 sees stalls of a few ms).
 */
function profileFlags(role: Role, name: string): string[] {
  if (!rolesIn('BENCH_CPU_PROF').includes(role)) return [];
  const interval = Number(process.env.BENCH_CPU_PROF_INTERVAL_US);
  return [
    '--cpu-prof',
    `--cpu-prof-dir=${join(ROOT, 'bench/results/profiles', name)}`,
    ...(Number.isInteger(interval) && interval > 0 ? [`--cpu-prof-interval=${interval}`] : []),
  ];
}

/**
 * The service as production runs it: migrations once, then each app in a process of its own
 * (`scripts/start.ts api|worker|dispatcher`), all with the same environment. Samples every process's
 * memory while it runs.
 */
export class ServiceRunner {
  readonly procs: ServiceProcess[] = [];
  private sampler: NodeJS.Timeout | null = null;
  /** The phase the samples are filed under (`setup`, `ingest`, `apply`…). */
  phase = 'setup';

  constructor(private readonly env: Record<string, string>) {}

  async migrate(timeoutMs = 60_000): Promise<void> {
    const child = spawnNode('migrate', ['packages/db/src/migrate-cli.ts'], this.env);
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    const code = await exited(child);
    clearTimeout(timer);
    if (code !== 0) throw new Error(`migrations failed (exit code ${code})`);
  }

  /**
   * Starts one process of `role` and waits until it says it is ready (its modules loaded, its stores reached,
   * its consumers running), as `npm start`'s supervisor does: a figure's clock starts on a warm process, not
   * on one still loading. An API gets a free port of its own.
   */
  async start(role: Role, timeoutMs = 60_000): Promise<ServiceProcess> {
    const port = role === 'api' ? await freePort() : null;
    const name = `${role}${this.procs.filter((p) => p.role === role).length + 1}`;
    const inspectPort = heapProfiled(role) ? await freePort() : null;
    // As `npm run start:<role>` and docker-compose.yml run it: the same heap cap (see docs/operating.md).
    const child = spawnNode(
      name,
      [
        HEAP_CAP,
        ...profileFlags(role, name),
        ...nodeFlags(role),
        ...(inspectPort ? [`--inspect=127.0.0.1:${inspectPort}`] : []),
        'scripts/start.ts',
        role,
      ],
      { ...this.env, ...(port ? { PORT: String(port) } : {}), [SUPERVISED]: '1' },
      true,
    );
    if (!child.pid) throw new Error(`${name} did not start`);
    const ready = readyOf(child, name, timeoutMs);
    const proc: ServiceProcess = {
      name,
      role,
      child,
      pid: child.pid,
      port,
      peakRssKb: 0,
      rssKbByPhase: {},
      cpuByPhase: {},
      stopping: false,
      heap: null,
    };
    this.procs.push(proc);
    await ready;
    if (inspectPort) {
      const sampler = new HeapSampler(inspectPort, join(ROOT, 'bench/results/profiles', name));
      await sampler.start();
      proc.heap = { sampler, phase: this.phase, bytesByPhase: {} };
    }
    return proc;
  }

  /**
   * From here on, memory and CPU samples are filed under `phase`, and each heap-profiled process's allocation
   * too: the profile of the phase that ends is written, and its bytes counted.
   */
  async enterPhase(phase: string): Promise<void> {
    if (phase === this.phase) return;
    this.phase = phase;
    await Promise.all(this.procs.map((p) => this.endHeapPhase(p, true)));
  }

  private async endHeapPhase(proc: ServiceProcess, again: boolean): Promise<void> {
    const heap = proc.heap;
    if (!heap || proc.stopping) return;
    const ended = heap.phase;
    const bytes = again ? await heap.sampler.rotate(ended) : await heap.sampler.stop(ended);
    heap.bytesByPhase[ended] = (heap.bytesByPhase[ended] ?? 0) + bytes;
    heap.phase = this.phase;
  }

  /** Starts processes of `role` until `n` run (a figure run alone, `--only`, finds none started before it). */
  async ensure(role: Role, n: number): Promise<void> {
    while (this.procs.filter((p) => p.role === role && !p.stopping).length < n) await this.start(role);
  }

  /** Starts an API process and waits until its /ready answers 200. */
  async startApi(timeoutMs = 60_000): Promise<ServiceProcess> {
    const proc = await this.start('api');
    await waitHttpOk(`http://127.0.0.1:${proc.port}/ready`, timeoutMs, () => this.assertAlive());
    return proc;
  }

  /** Throws when a process exited that the bench did not stop. */
  assertAlive(): void {
    for (const p of this.procs) {
      if (!p.stopping && (p.child.exitCode !== null || p.child.signalCode !== null)) {
        throw new Error(`${p.name} exited unexpectedly (${p.child.exitCode ?? p.child.signalCode})`);
      }
    }
  }

  /**
   * CPU time the live processes of `role` have used so far (user + system), in ms, summed; null without /proc.
   * Read before and after a phase, the difference is what the role spent on it.
   */
  async cpuMsOf(role: Role): Promise<number | null> {
    const ticks = await Promise.all(
      this.procs.filter((p) => p.role === role && !p.stopping).map((p) => cpuTicksOf(p.pid)),
    );
    if (ticks.length === 0 || ticks.some((t) => t === null)) return null;
    return (ticks.reduce((a, b) => a! + b!, 0)! * 1000) / TICKS_PER_SECOND;
  }

  /** Reads every live process's memory once. */
  async sample(): Promise<void> {
    await Promise.all(
      this.procs.map(async (p) => {
        if (p.stopping) return;
        const [mem, ticks] = await Promise.all([memoryOf(p.pid), cpuTicksOf(p.pid)]);
        if (!mem) return;
        p.peakRssKb = Math.max(p.peakRssKb, mem.rss, mem.hwm);
        p.rssKbByPhase[this.phase] = Math.max(p.rssKbByPhase[this.phase] ?? 0, mem.rss);
        if (ticks === null) return;
        const at = performance.now();
        const cpu = p.cpuByPhase[this.phase];
        if (cpu) {
          cpu.ticks = ticks;
          cpu.at = at;
        } else p.cpuByPhase[this.phase] = { ticks0: ticks, at0: at, ticks, at };
      }),
    );
  }

  startSampling(everyMs: number): void {
    const tick = () => {
      void this.sample().finally(() => {
        if (this.sampler) this.sampler = setTimeout(tick, everyMs);
      });
    };
    this.sampler = setTimeout(tick, 0);
  }

  /** Stops one process, reading its memory high-water mark first. */
  async stop(proc: ServiceProcess): Promise<void> {
    const mem = await memoryOf(proc.pid);
    if (mem) proc.peakRssKb = Math.max(proc.peakRssKb, mem.rss, mem.hwm);
    // A heap profile that cannot be read (the process died) leaves its last phase uncounted.
    await this.endHeapPhase(proc, false).catch(() => {});
    proc.stopping = true;
    await stopChild(proc.child);
  }

  /** Stops sampling and every process (each given 10 s to finish, then killed). */
  async stopAll(): Promise<void> {
    if (this.sampler) clearTimeout(this.sampler);
    this.sampler = null;
    await Promise.all(this.procs.map((p) => this.stop(p)));
    await sleep(0);
  }

  /** Peak RSS of each process, in MB, the highest sampled in each phase, and the CPU it used in each phase. */
  peaks(): ProcessMemory[] {
    const mb = (kb: number) => Math.round(kb / 1024);
    return this.procs.map((p) => ({
      name: p.name,
      role: p.role,
      peakRssMb: mb(p.peakRssKb),
      sampledRssMbByPhase: Object.fromEntries(Object.entries(p.rssKbByPhase).map(([k, v]) => [k, mb(v)])),
      cpuPercentByPhase: Object.fromEntries(
        Object.entries(p.cpuByPhase)
          .filter(([, c]) => c.at > c.at0)
          .map(([k, c]) => [
            k,
            Math.round((((c.ticks - c.ticks0) / TICKS_PER_SECOND) * 100_000) / (c.at - c.at0)),
          ]),
      ),
      ...(p.heap
        ? {
            allocatedMbByPhase: Object.fromEntries(
              Object.entries(p.heap.bytesByPhase).map(([k, v]) => [k, Math.round(v / 1024 / 1024)]),
            ),
          }
        : {}),
    }));
  }
}
