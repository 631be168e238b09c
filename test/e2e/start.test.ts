import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { describe, expect, it, onTestFinished } from 'vitest';
import { client } from '../support/client';
import { useTestDb } from '../support/use';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TOKEN = `op_${randomBytes(16).toString('hex')}`;

type Run = { child: ChildProcess; output: () => string; exited: Promise<number | null> };

function start(env: Record<string, string>): Run {
  const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/start.ts'], {
    cwd: ROOT,
    env: { ...process.env, LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (d) => (out += d));
  child.stderr?.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, output: () => out, exited };
}

async function waitFor(run: Run, pattern: RegExp, timeoutMs = 20_000): Promise<RegExpMatchArray> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const m = run.output().match(pattern);
    if (m) return m;
    if (Date.now() > deadline || run.child.exitCode !== null)
      throw new Error(`no ${pattern} in:\n${run.output()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const db = useTestDb();

describe('npm start', () => {
  it('names the missing service and how to start it, and exits 1', async () => {
    const run = start({ DATABASE_URL: 'postgres://postgres@127.0.0.1:1/stampcard', OPERATOR_TOKEN: TOKEN });
    expect(await run.exited).toBe(1);
    expect(run.output()).toContain('PostgreSQL is not reachable at 127.0.0.1:1');
    expect(run.output()).toContain('docker compose up -d postgres');
  });

  it('rejects an invalid environment with a message naming the variable', async () => {
    const run = start({ PORT: 'eighty', OPERATOR_TOKEN: TOKEN });
    expect(await run.exited).toBe(1);
    expect(run.output()).toMatch(/PORT/);
  });

  it('migrates, serves, and stops gracefully on SIGTERM', async () => {
    const prefix = `stampcard_start_${randomBytes(4).toString('hex')}`;
    onTestFinished(async () => {
      const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
      const keys = await redis.keys(`${prefix}:*`);
      if (keys.length > 0) await redis.del(...keys);
      redis.disconnect();
    });
    const run = start({
      DATABASE_URL: db.url,
      PORT: '0',
      HOST: '127.0.0.1',
      OPERATOR_TOKEN: TOKEN,
      QUEUE_PREFIX: prefix,
    });
    const [, port] = await waitFor(run, /"port":(\d+)/);
    const base = `http://127.0.0.1:${port}`;
    const http = (path: string, init: RequestInit) => fetch(`${base}${path}`, init);
    expect((await client(http).get('/health')).status).toBe(200);
    expect((await client(http).get('/ready')).body.status).toBe('ready');
    const account = await client(http, TOKEN).post('/admin/v1/accounts', { name: 'Acme', plan: 'GROWTH' });
    expect(account.status).toBe(200);
    run.child.kill('SIGTERM');
    expect(await run.exited).toBe(0);
    expect(run.output()).toContain('"msg":"stopped"');
  });
});
