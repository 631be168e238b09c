import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `redis-cli` against a loopback port: its output. */
export async function redisCli(port: number, ...args: string[]): Promise<string> {
  const { stdout } = await run('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], {
    timeout: 10_000,
  });
  return stdout;
}

/** Resolves once `check` answers true (a check that throws is false), or throws after `timeoutMs`. */
export async function until(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`${what} not within ${timeoutMs} ms`);
    await sleep(100);
  }
}

/**
 * A `redis-server` of a test's own on a loopback port, as production runs it (`noeviction`) but keeping
 * nothing on disk, its files in `dir`, and `extra` arguments on top. A replica syncs at once: Redis waits 5 s by
 * default for more replicas to share a diskless sync, and a replica that never synced may not take over.
 */
export function spawnRedis(port: number, dir: string, extra: string[] = []): ChildProcess {
  return spawn(
    'redis-server',
    [
      ...['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      ...['--maxmemory-policy', 'noeviction', '--repl-diskless-sync-delay', '0', '--dir', dir],
      ...extra,
    ],
    { stdio: 'ignore' },
  );
}

/** Whether a process started by the test still runs. */
export const alive = (child: ChildProcess) => child.exitCode === null && child.signalCode === null;
