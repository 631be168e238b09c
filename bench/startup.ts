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
 * removed at the end. RSS is read from /proc one second after the ready line (VmRSS), with the high-water
 * mark (VmHWM) so far. Prints a Markdown table of medians and ranges, and every run.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { runMigrations } from '@stampcard/db';
import { Redis } from 'ioredis';
import { createDatabase, databaseUrl, dropDatabase } from './database';
import { ROOT, type Role } from './service';
import { sleep } from './util';

type Mode = 'tsx' | 'tsx-cold' | 'node';
type Sample = { role: Role; mode: Mode; run: number; readyMs: number; rssMb: number; hwmMb: number };

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

/** VmRSS and VmHWM of `pid`, in MB. */
function memory(pid: number): { rssMb: number; hwmMb: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(status.match(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm'))?.[1]);
  return { rssMb: kb('VmRSS') / 1024, hwmMb: kb('VmHWM') / 1024 };
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
  const mem = memory(child.pid!);
  child.kill('SIGTERM');
  await exited(child);
  return { role, mode, run, readyMs, ...mem };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};
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
              `RSS ${s.rssMb.toFixed(1)} MB (peak ${s.hwmMb.toFixed(1)} MB)`,
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
  console.log(
    `| role | run as | start-up to ready, ms: median (min–max) | RSS after start, MB | peak RSS, MB |`,
  );
  console.log('| --- | --- | --- | --- | --- |');
  for (const role of ROLES) {
    for (const mode of modes) {
      const mine = samples.filter((s) => s.role === role && s.mode === mode);
      console.log(
        `| ${role} | ${mode} | ${range(
          mine.map((s) => s.readyMs),
          0,
        )} | ${range(
          mine.map((s) => s.rssMb),
          1,
        )} | ${range(
          mine.map((s) => s.hwmMb),
          1,
        )} |`,
      );
    }
  }
}

await main();
