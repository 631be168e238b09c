import { type ChildProcess, spawn } from 'node:child_process';
import { Redis } from 'ioredis';
import { freePort } from './processes';

/** A redis-server of a test's own: the shared one on 6379 is never stopped. */
export type OwnRedis = { url: string; stop(): Promise<void>; start(): Promise<void> };

/** A redis-server of the test's own on a free port, started now; `extraArgs` go on its command line. */
export async function ownRedis(extraArgs: string[] = []): Promise<OwnRedis> {
  const port = await freePort();
  const url = `redis://127.0.0.1:${port}`;
  let proc: ChildProcess | null = null;
  const start = async () => {
    proc = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', ...extraArgs],
      {
        stdio: 'ignore',
      },
    );
    const probe = new Redis(url, { lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 });
    probe.on('error', () => {});
    const until = Date.now() + 10_000;
    for (;;) {
      try {
        await probe.connect();
        await probe.ping();
        break;
      } catch {
        if (Date.now() > until) throw new Error(`redis-server on ${port} did not start`);
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    probe.disconnect();
  };
  // Whatever becomes of the test's hooks, the server does not outlive the test process.
  process.once('exit', () => {
    if (proc && proc.exitCode === null) proc.kill('SIGKILL');
  });
  const stop = async () => {
    const p = proc;
    if (!p || p.exitCode !== null) return;
    const exited = new Promise((r) => p.once('exit', r));
    p.kill('SIGKILL');
    await exited;
  };
  await start();
  return { url, start, stop };
}
