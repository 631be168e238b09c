import { type ChildProcess, spawn } from 'node:child_process';
import { type AddressInfo, createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** A service process started by a test, with everything it printed. */
export type Run = { child: ChildProcess; output: () => string; exited: Promise<number | null> };

/**
 * The TypeScript sources through tsx, with the workspace packages' sources (the `@stampcard/source` export
 * condition) rather than their build.
 */
export const FROM_SOURCE = ['--conditions=@stampcard/source', '--import', 'tsx'];

/** Runs `scripts/start.ts` (or other args) from the sources, with the test's environment on top. */
export function startProcess(env: Record<string, string>, args = ['scripts/start.ts']): Run {
  return run(process.execPath, [...FROM_SOURCE, ...args], env);
}

/**
 * Runs the built JavaScript with plain node, no tsx: `dist/start.js` (or other args), as `npm start` and the
 * image do. The global setup builds it (`npm run build`) before any test file runs.
 */
export function startBuilt(env: Record<string, string>, args = ['dist/start.js']): Run {
  return run(process.execPath, args, env);
}

/**
 * `npm start` (or another npm script) as a user types it in a terminal: it builds (turbo's cache), then runs
 * the build. In a process group of its own, as a terminal's job is: `interrupt` is the user's Ctrl-C, to the
 * whole group (npm passes the script to `sh -c`, which a signal to npm alone would leave running).
 */
export function startNpm(env: Record<string, string>, script = 'start'): Run & { interrupt(): void } {
  const started = run('npm', ['run', script], env, true);
  return { ...started, interrupt: () => process.kill(-started.child.pid!, 'SIGINT') };
}

function run(command: string, args: string[], env: Record<string, string>, detached = false): Run {
  const child = spawn(command, args, {
    cwd: ROOT,
    detached,
    // No metrics listener unless a test asks for one: many roles run at once on one machine.
    env: { ...process.env, LOG_LEVEL: 'info', METRICS_PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (d) => (out += d));
  child.stderr?.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, output: () => out, exited };
}

/** Waits until the process printed something matching `pattern`; fails if it exits or the time runs out. */
export async function waitForOutput(
  run: Run,
  pattern: RegExp,
  timeoutMs = 20_000,
): Promise<RegExpMatchArray> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const m = run.output().match(pattern);
    if (m) return m;
    if (Date.now() > deadline || run.child.exitCode !== null)
      throw new Error(`no ${pattern} in:\n${run.output()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A TCP port nobody listens on right now. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Runs a command to its end, with `env` on top of this process's environment, in the repository's folder. */
export function runToEnd(
  command: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (d) => (stdout += d));
    child.stderr?.on('data', (d) => (stderr += d));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}
