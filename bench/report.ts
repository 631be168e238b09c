import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import type { ApplyFigure } from './figures/apply';
import type { DispatchFigure } from './figures/dispatch';
import type { E2eFigure } from './figures/e2e';
import type { IngestFigure } from './figures/ingest';
import type { StorageFigure } from './figures/storage';
import type { Health } from './health';
import { promotedOnly } from './heap';
import type { ClosedLoopResult } from './load';
import { type ProcessMemory, ROOT } from './service';
import type { FigureName, Settings } from './settings';
import type { FigureStatements } from './statements';
import { round } from './util';

export type Figures = {
  ingest?: IngestFigure;
  apply?: ApplyFigure;
  dispatch?: DispatchFigure;
  e2e?: E2eFigure;
  /** The same, to an endpoint ordered by participant. */
  ordered?: E2eFigure;
  storage?: StorageFigure;
  memory?: { processes: ProcessMemory[]; maxMb: number };
};

export const TARGETS = {
  ingest: 0.1,
  /** At the ingest figure's connections (32). */
  ingestP99Ms: 15,
  /** One caller sending one action at a time. */
  serialP50Ms: 2,
  serialP99Ms: 5,
  apply: 1.5,
  dispatch: 0.5,
  /** At the e2e figure's rate (`e2eRate`): judged only there. */
  e2eP99Ms: 100,
  e2eRate: 1_000,
  rssMb: 300,
};

export type Machine = {
  cpus: number;
  cpuModel: string;
  memoryMb: number;
  os: string;
  node: string;
  postgres: string;
  redis: string;
};

export function machine(postgres: string, redis: string): Machine {
  return {
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model.trim() ?? 'unknown',
    memoryMb: Math.round(os.totalmem() / 1024 / 1024),
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    node: process.version,
    postgres,
    redis,
  };
}

function git(): { commit: string | null; dirty: boolean | null } {
  try {
    const commit = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
    const status = execFileSync('git', ['status', '--porcelain'], { cwd: ROOT, encoding: 'utf8' });
    return { commit, dirty: status.trim().length > 0 };
  } catch {
    return { commit: null, dirty: null };
  }
}

export type Ratios = {
  ingest: number | null;
  ingestP99Ms: number | null;
  serialP50Ms: number | null;
  serialP99Ms: number | null;
  /** The one caller's p50 ÷ its floor's (`serialFloor`): 1 would be this machine's two round trips alone. */
  serialOverFloor: number | null;
  serialFloorP50Ms: number | null;
  serialFloorP99Ms: number | null;
  apply: number | null;
  dispatch: number | null;
  e2eP99Ms: number | null;
  rssMb: number | null;
};

function overFloor(i: Figures['ingest']): number | null {
  const ours = i?.serial.latencyMs.p50;
  const floor = i?.serialFloor.latencyMs.p50;
  return ours == null || !floor ? null : round(ours / floor, 2);
}

export function ratiosOf(f: Figures): Ratios {
  return {
    ingest: f.ingest?.ratio ?? null,
    ingestP99Ms: f.ingest?.stampcard.latencyMs.p99 ?? null,
    serialP50Ms: f.ingest?.serial.latencyMs.p50 ?? null,
    serialP99Ms: f.ingest?.serial.latencyMs.p99 ?? null,
    serialOverFloor: overFloor(f.ingest),
    serialFloorP50Ms: f.ingest?.serialFloor.latencyMs.p50 ?? null,
    serialFloorP99Ms: f.ingest?.serialFloor.latencyMs.p99 ?? null,
    apply: f.apply?.ratio ?? null,
    dispatch: f.dispatch?.ratio ?? null,
    e2eP99Ms: f.e2e?.latencyMs.p99 ?? null,
    rssMb: f.memory?.maxMb ?? null,
  };
}

/** Whether each target is met; null when its figure was not measured. */
export function targetsMet(f: Figures) {
  const r = ratiosOf(f);
  const met = (v: number | null, ok: (v: number) => boolean) => (v === null ? null : ok(v));
  return {
    ingest: met(r.ingest, (v) => v >= TARGETS.ingest),
    ingestP99: met(r.ingestP99Ms, (v) => v <= TARGETS.ingestP99Ms),
    serial: met(
      r.serialP50Ms,
      (v) => v <= TARGETS.serialP50Ms && (r.serialP99Ms ?? Infinity) <= TARGETS.serialP99Ms,
    ),
    apply: met(r.apply, (v) => v >= TARGETS.apply),
    dispatch: met(r.dispatch, (v) => v >= TARGETS.dispatch),
    // Run at another rate (BENCH_E2E_RATE), the figure is not the target's: neither met nor missed.
    e2e: met(
      f.e2e?.load.rate === TARGETS.e2eRate ? r.e2eP99Ms : null,
      (v) => v < TARGETS.e2eP99Ms && f.e2e?.missing === 0,
    ),
    memory: met(r.rssMb, (v) => v < TARGETS.rssMb),
  };
}

/** The whole run as JSON: bench/results/latest.json and a copy named after the run's start time. */
export function writeResults(run: {
  startedAt: Date;
  settings: Settings;
  argv: string[];
  machine: Machine;
  serviceEnv: Record<string, string>;
  figures: Figures;
  /** `--statements`: each figure's statements (bench/statements.ts). */
  statements?: Partial<Record<FigureName, FigureStatements>>;
  health: Health;
  errors: string[];
}): string {
  const dir = join(ROOT, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  const doc = {
    startedAt: run.startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
    command: `npm run bench${run.argv.length ? ` -- ${run.argv.join(' ')}` : ''}`,
    settings: run.settings,
    serviceEnv: run.serviceEnv,
    machine: run.machine,
    git: git(),
    ratios: ratiosOf(run.figures),
    targets: TARGETS,
    met: targetsMet(run.figures),
    figures: run.figures,
    ...(run.statements ? { statements: run.statements } : {}),
    health: run.health,
    errors: run.errors,
  };
  const text = `${JSON.stringify(doc, null, 2)}\n`;
  const stamp = run.startedAt.toISOString().replace(/[:.]/g, '-');
  writeFileSync(join(dir, `${stamp}-${run.settings.mode}.json`), text);
  writeFileSync(join(dir, 'latest.json'), text);
  return join('bench', 'results', 'latest.json');
}

const fmt = (v: number | null | undefined, digits = 0) =>
  v === null || v === undefined ? 'n/a' : v.toLocaleString('en-US', { maximumFractionDigits: digits });
const yes = (v: boolean | null) => (v === null ? 'n/a' : v ? 'yes' : 'NO');

/** The figures as a text table, for the terminal. */
export function summary(f: Figures): string {
  const met = targetsMet(f);
  const r = ratiosOf(f);
  const rows: string[][] = [['figure', 'Stampcard', 'baseline', 'ratio', 'target', 'met']];
  const i = f.ingest;
  rows.push([
    `ingest: accepted actions/s (p50 / p99)${i ? `, ${i.stampcard.tool} ×${i.stampcard.connections}` : ''}`,
    i
      ? `${fmt(i.stampcard.okPerSecond)} (${fmt(i.stampcard.latencyMs.p50, 1)} / ${fmt(i.stampcard.latencyMs.p99, 1)} ms)`
      : 'n/a',
    i
      ? `${fmt(i.baseline.okPerSecond)} (${fmt(i.baseline.latencyMs.p50, 1)} / ${fmt(i.baseline.latencyMs.p99, 1)} ms)`
      : 'n/a',
    fmt(i?.ratio, 3),
    `≥ ${TARGETS.ingest}, p99 ≤ ${TARGETS.ingestP99Ms} ms`,
    yes(met.ingest === null ? null : met.ingest && met.ingestP99 === true),
  ]);
  rows.push([
    'ingest: one caller, one at a time, p50 / p99',
    i ? `${fmt(i.serial.latencyMs.p50, 2)} / ${fmt(i.serial.latencyMs.p99, 2)} ms` : 'n/a',
    i ? `floor ${fmt(i.serialFloor.latencyMs.p50, 2)} / ${fmt(i.serialFloor.latencyMs.p99, 2)} ms` : 'n/a',
    // How many times the floor's p50 (a latency: 1 would be the floor itself).
    fmt(r.serialOverFloor, 2),
    `≤ ${TARGETS.serialP50Ms} / ${TARGETS.serialP99Ms} ms`,
    yes(met.serial),
  ]);
  const a = f.apply;
  rows.push([
    'apply: actions/s',
    fmt(a?.stampcard.perSecond),
    a ? `${fmt(a.baseline.perSecond)} (best: ${a.baseline.connections} connections)` : 'n/a',
    fmt(a?.ratio, 3),
    `≥ ${TARGETS.apply}`,
    yes(met.apply),
  ]);
  if (a?.oneBatch) {
    const o = a.oneBatch;
    rows.push([
      `apply: one batch of ${o.size} at a time, mean / p50 / p99`,
      `${o.meanMs} / ${o.p50Ms} / ${o.p99Ms} ms`,
      'none',
      '',
      '',
      '',
    ]);
  }
  if (a?.behindBacklog) {
    const o = a.behindBacklog;
    rows.push([
      `apply: the same behind a backlog of ${fmt(o.backlog)} the statistics predate`,
      `${o.meanMs} / ${o.p50Ms} / ${o.p99Ms} ms`,
      a.oneBatch ? `${a.oneBatch.meanMs} ms mean without` : 'none',
      a.oneBatch ? fmt(o.meanMs / a.oneBatch.meanMs, 2) : '',
      '',
      '',
    ]);
  }
  const d = f.dispatch;
  rows.push([
    'dispatch: webhook deliveries/s (Redis commands per delivery)',
    d ? `${fmt(d.stampcard.perSecond)} (${d.stampcard.redisCommandsPerDelivery})` : fmt(undefined),
    fmt(d?.baseline.perSecond),
    fmt(d?.ratio, 3),
    `≥ ${TARGETS.dispatch}`,
    yes(met.dispatch),
  ]);
  if (d && d.stampcard.cpuUsPerDelivery !== null) {
    // The bare loop's process holds the receiver too: its client's share is its CPU less the receiver's.
    const bareClient = d.baseline.cpuUsPerRequest - d.stampcard.receiverCpuUsPerDelivery;
    rows.push([
      'dispatch: CPU per delivery, µs (the bare loop: client, without its receiver)',
      fmt(d.stampcard.cpuUsPerDelivery),
      fmt(bareClient),
      bareClient > 0 ? fmt(d.stampcard.cpuUsPerDelivery / bareClient, 2) : '',
      '',
      '',
    ]);
  }
  const e = f.e2e;
  rows.push([
    `end to end: accepted → webhook p50 / p99${e ? ` at ${e.load.rate}/s` : ''}`,
    e
      ? `${fmt(e.latencyMs.p50)} / ${fmt(e.latencyMs.p99)} ms${e.missing ? ` (${e.missing} missing)` : ''}`
      : 'n/a',
    'none',
    '',
    `p99 < ${TARGETS.e2eP99Ms} ms`,
    yes(met.e2e),
  ]);
  if (e?.machineBusy) {
    rows.push([
      'end to end: the whole machine while its load was sent, % of one core',
      `${e.machineBusy.percent} of ${e.machineBusy.cores * 100}`,
      'none',
      '',
      '',
      '',
    ]);
  }
  const o = f.ordered;
  rows.push([
    'ordered endpoint: accepted → webhook p50 / p99',
    o
      ? `${fmt(o.latencyMs.p50)} / ${fmt(o.latencyMs.p99)} ms${o.missing ? ` (${o.missing} missing)` : ''}`
      : 'n/a',
    e ? `${fmt(e.latencyMs.p99)} ms unordered` : 'none',
    o && e?.latencyMs.p99 && o.latencyMs.p99 !== null ? fmt(o.latencyMs.p99 / e.latencyMs.p99, 2) : '',
    '',
    '',
  ]);
  rows.push([
    `a burst: webhooks/s, ordered against unordered`,
    o
      ? `${fmt(o.burst.perSecond)} (${o.burst.actions} actions, ${o.burst.participants} participants)`
      : 'n/a',
    e ? `${fmt(e.burst.perSecond)} unordered` : 'none',
    o && e?.burst.perSecond ? fmt(o.burst.perSecond / e.burst.perSecond, 2) : '',
    '',
    '',
  ]);
  const s = f.storage;
  rows.push([
    'storage: PostgreSQL bytes per action',
    s
      ? `${s.bytesPerAction.total} (${Object.entries(s.bytesPerAction.byTable)
          .slice(0, 4)
          .map(([name, b]) => `${name} ${b.total}`)
          .join(', ')})`
      : 'n/a',
    'none',
    '',
    '',
    '',
  ]);
  const m = f.memory;
  rows.push([
    'memory: peak RSS per process',
    m ? m.processes.map((p) => `${p.name} ${p.peakRssMb} MB`).join(', ') : 'n/a',
    'none',
    '',
    `< ${TARGETS.rssMb} MB each`,
    yes(met.memory),
  ]);
  const e2eCpu = m?.processes.filter((p) => p.cpuPercentByPhase.e2e !== undefined) ?? [];
  if (e2eCpu.length > 0) {
    rows.push([
      'CPU in the e2e phase (its load and the wait for its webhooks), % of one core',
      e2eCpu.map((p) => `${p.name} ${p.cpuPercentByPhase.e2e}`).join(', '),
      'none',
      '',
      '',
      '',
    ]);
  }
  const apiAllocated = m?.processes.filter((p) => p.role === 'api' && p.allocatedMbByPhase?.ingest) ?? [];
  if (i && apiAllocated.length > 0) {
    // Every request the API answered in the ingest phase: the warm-up, one caller's, wrk's and the stages' run.
    const answered = i.warmupRequests + i.serial.requests + i.stampcard.requests + i.loaded.requests;
    const mb = apiAllocated.reduce((sum, p) => sum + p.allocatedMbByPhase!.ingest!, 0);
    rows.push([
      promotedOnly()
        ? 'promoted by the API in the ingest phase (BENCH_HEAP_PROF_PROMOTED)'
        : 'allocated by the API in the ingest phase (BENCH_HEAP_PROF)',
      `${fmt(mb, 0)} MB, ${fmt((mb * 1024) / answered, 1)} KB per answered request (${answered})`,
      'none',
      '',
      '',
      '',
    ]);
  }
  return `${table(rows)}${i ? `\n\n${stageTable(i.serial, i.loaded, i.serialFloor)}` : ''}`;
}

/** Where an accept's time goes: each `Server-Timing` stage's mean (p99), alone and under load. */
function stageTable(serial: ClosedLoopResult, loaded: ClosedLoopResult, floor: ClosedLoopResult): string {
  const names = [...new Set([...serial.stages, ...loaded.stages].map((st) => st.stage))];
  const cell = (r: ClosedLoopResult, name: string) => {
    const st = r.stages.find((x) => x.stage === name);
    return st ? `${fmt(st.mean, 2)} (${fmt(st.p99, 2)})` : '';
  };
  const rows = [
    ['stage: mean (p99) ms', 'one caller', `${loaded.connections} callers`],
    ...names.map((name) => [name, cell(serial, name), cell(loaded, name)]),
    [
      'client-measured p50 / p99',
      `${fmt(serial.latencyMs.p50, 2)} / ${fmt(serial.latencyMs.p99, 2)}`,
      `${fmt(loaded.latencyMs.p50, 2)} / ${fmt(loaded.latencyMs.p99, 2)}`,
    ],
    // The same caller against a bare server making the same two round trips (`serialFloor`).
    [
      'floor (Redis script + committed row)',
      `${fmt(floor.latencyMs.p50, 2)} / ${fmt(floor.latencyMs.p99, 2)}`,
      '',
    ],
  ];
  return table(rows);
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  return rows
    .map((r) =>
      r
        .map((cell, c) => cell.padEnd(widths[c]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/**
 * The run's last line: `ratios: ingest=<x.xx> ingest_p99_ms=<x.xx> serial_p50_ms=<x.xx> serial_p99_ms=<x.xx> apply=<x.xx> dispatch=<x.xx> e2e_p99_ms=<n> rss_mb=<n>
 * bytes_per_action=<n> serial_floor_p50_ms=<x.xx> serial_floor_p99_ms=<x.xx>` (the floor's last, so that a reader
 * of the earlier fields reads them where they were).
 */
export function ratiosLine(f: Figures): string {
  const r = ratiosOf(f);
  const two = (v: number | null) => (v === null ? 'n/a' : v.toFixed(2));
  const int = (v: number | null) => (v === null ? 'n/a' : String(Math.round(v)));
  const bytes = int(f.storage?.bytesPerAction.total ?? null);
  return `ratios: ingest=${two(r.ingest)} ingest_p99_ms=${two(r.ingestP99Ms)} serial_p50_ms=${two(r.serialP50Ms)} serial_p99_ms=${two(r.serialP99Ms)} apply=${two(r.apply)} dispatch=${two(r.dispatch)} e2e_p99_ms=${int(r.e2eP99Ms)} rss_mb=${int(r.rssMb)} bytes_per_action=${bytes} serial_floor_p50_ms=${two(r.serialFloorP50Ms)} serial_floor_p99_ms=${two(r.serialFloorP99Ms)}`;
}
