/**
 * `npm run bench:startup [-- --runs 3 --modes tsx,node]`: how long each role takes from process start to its
 * ready log line, and its resident memory once started, run the two ways the project has run them:
 *
 * - `tsx`: TypeScript compiled at run time, `node --max-old-space-size=160 --import tsx scripts/start.ts <role>`
 *   (the image's command before it shipped JavaScript), with tsx's cache of compiled files warm;
 * - `tsx-cold`: the same with that cache off (`TSX_DISABLE_CACHE=1`), as in a container's first start, whose
 *   cache directory is empty;
 * - `node`: the built JavaScript, `node --max-old-space-size=160 dist/start.js <role>` (`npm run start:<role>`
 *   and the image now; `npm run build` first).
 *
 * Each run starts every role once per way, one process at a time (the ways alternate, so a busy moment on the
 * machine does not land on one way only), against a database of its own and a queue prefix of its own, both
 * removed at the end. One second after the ready line, from /proc: the resident memory of the process and of
 * the processes it started (tsx runs esbuild as a child process; the built roles start none), and the CPU
 * time they have used so far, which a busy machine changes less than the wall time to ready. Prints a
 * Markdown table of medians and ranges, and every run.
 */

import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { runMigrations } from '@stampcard/db';
import { Redis } from 'ioredis';
import { createDatabase, databaseUrl, dropDatabase } from './database';
import { ROOT, type Role } from './service';
import { sleep } from './util';

type Mode = 'tsx' | 'tsx-cold' | 'node';
type Sample = { role: Role; mode: Mode; run: number; readyMs: number; cpuMs: number; rssMb: number };

const READY: Record<Role, RegExp> = {
  api: /Stampcard API listening/,
  worker: /worker and relay running/,
  dispatcher: /webhook dispatcher and sweep running/,
};
const ROLES: Role[] = ['api', 'worker', 'dispatcher'];
const MEMORY = '--max-old-space-size=160';
const COMMAND: Record<Mode, string[]> = {
  // The sources: workspace packages resolve to their src/ (the `@stampcard/source` export condition).
  tsx: [MEMORY, '--conditions=@stampcard/source', '--import', 'tsx', 'scripts/start.ts'],
  'tsx-cold': [MEMORY, '--conditions=@stampcard/source', '--import', 'tsx', 'scripts/start.ts'],
  node: [MEMORY, 'dist/start.js'],
};
const ENV: Record<Mode, Record<string, string>> = {
  tsx: {},
  'tsx-cold': { TSX_DISABLE_CACHE: '1' },
  node: {},
};

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '3' },
    modes: { type: 'string', default: 'tsx,tsx-cold,node' },
  },
});
const runs = Number(values.runs);
const modes = values.modes.split(',') as Mode[];
for (const m of modes)
  if (!(m in COMMAND)) throw new Error(`unknown mode ${m}: use tsx, tsx-cold and/or node`);
if (modes.includes('node') && !existsSync(join(ROOT, 'dist/start.js')))
  throw new Error('dist/start.js is missing: run `npm run build` first');

const adminUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const dbName = `stampcard_startup_${randomBytes(4).toString('hex')}`;
const prefix = `stampcard_startup_${randomBytes(4).toString('hex')}`;

const TICKS_PER_S = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }));

/** Resident memory (MB) and CPU time so far (ms) of `pid` and the processes below it. */
function usage(pid: number): { rssMb: number; cpuMs: number } {
  const stats = new Map<number, string[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const text = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // The fields after the command name, which may hold spaces: state is field 3, ppid field 4.
      stats.set(Number(entry), text.slice(text.lastIndexOf(')') + 2).split(' '));
    } catch {
      // It exited meanwhile.
    }
  }
  const mine = new Set([pid]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const [p, fields] of stats) {
      if (!mine.has(p) && mine.has(Number(fields[1]))) {
        mine.add(p);
        grew = true;
      }
    }
  }
  let rssKb = 0;
  let ticks = 0;
  for (const p of mine) {
    const fields = stats.get(p);
    if (!fields) continue;
    // utime and stime, then the same for children already reaped (fields 14 to 17).
    ticks += Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]);
    const status = readFileSync(`/proc/${p}/status`, 'utf8');
    rssKb += Number(status.match(/^VmRSS:\s+(\d+) kB/m)?.[1] ?? 0);
  }
  return { rssMb: rssKb / 1024, cpuMs: (ticks / TICKS_PER_S) * 1000 };
}

function exited(child: ChildProcess): Promise<unknown> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', resolve));
}

async function measure(role: Role, mode: Mode, run: number, url: string): Promise<Sample> {
  const started = performance.now();
  const child = spawn(process.execPath, [...COMMAND[mode], role], {
    cwd: ROOT,
    env: {
      ...process.env,
      DATABASE_URL: url,
      REDIS_URL: redisUrl,
      QUEUE_PREFIX: prefix,
      OPERATOR_TOKEN: `op_${randomBytes(16).toString('hex')}`,
      PORT: '0',
      METRICS_PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      ...ENV[mode],
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stderr?.on('data', (d) => (out += d));
  const readyMs = await new Promise<number>((resolve, reject) => {
    child.stdout?.on('data', (d) => {
      out += d;
      if (READY[role].test(out)) resolve(performance.now() - started);
    });
    child.once('exit', (code) => reject(new Error(`${role} (${mode}) exited ${code} before ready:\n${out}`)));
  });
  await sleep(1000);
  const used = usage(child.pid!);
  child.kill('SIGTERM');
  await exited(child);
  return { role, mode, run, readyMs, ...used };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};
/** `median (min–max)`. */
const range = (xs: number[], digits: number) =>
  `${median(xs).toFixed(digits)} (${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)})`;

async function main() {
  await createDatabase(adminUrl, dbName);
  const url = databaseUrl(adminUrl, dbName);
  const samples: Sample[] = [];
  try {
    await runMigrations(url);
    console.error(`node ${process.version}, load average before: ${loadavg().map((l) => l.toFixed(2))}`);
    for (let run = 1; run <= runs; run++) {
      // Rotate which way goes first from one run to the next.
      const order = modes.map((_, i) => modes[(i + run - 1) % modes.length]!);
      for (const role of ROLES) {
        for (const mode of order) {
          const s = await measure(role, mode, run, url);
          samples.push(s);
          console.error(
            `run ${run} ${role.padEnd(10)} ${mode.padEnd(8)} ready ${s.readyMs.toFixed(0)} ms, ` +
              `CPU ${s.cpuMs.toFixed(0)} ms, RSS ${s.rssMb.toFixed(1)} MB`,
          );
        }
      }
    }
  } finally {
    await dropDatabase(adminUrl, dbName);
    const redis = new Redis(redisUrl);
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  }
  console.error(`load average after: ${loadavg().map((l) => l.toFixed(2))}`);
  console.log('| role | run as | start-up to ready, ms | CPU used by then, ms | RSS after start, MB |');
  console.log('| --- | --- | --- | --- | --- |');
  for (const role of ROLES) {
    for (const mode of modes) {
      const mine = samples.filter((s) => s.role === role && s.mode === mode);
      const cells = [
        range(
          mine.map((s) => s.readyMs),
          0,
        ),
        range(
          mine.map((s) => s.cpuMs),
          0,
        ),
        range(
          mine.map((s) => s.rssMb),
          1,
        ),
      ];
      console.log(`| ${role} | ${mode} | ${cells.join(' | ')} |`);
    }
  }
}

await main();
