import type { ChildProcess } from 'node:child_process';
import type { Logger } from '@stampcard/config';

/** Set on a role started under a supervisor (`npm start`'s, the bench's): it reports ready over IPC and stops with it. */
export const SUPERVISED = 'STAMPCARD_SUPERVISED';

/** What a supervised role tells its supervisor over the IPC channel once it runs. */
export type ReadyMessage = { type: 'stampcard:ready'; role: string; port?: number };

export const isReadyMessage = (m: unknown): m is ReadyMessage =>
  typeof m === 'object' && m !== null && (m as { type?: unknown }).type === 'stampcard:ready';

export type SupervisorOptions = {
  /** The roles to run, one child process each. */
  roles: readonly string[];
  /** Starts one role's process, with an IPC channel (`fork`) over which it sends a `ReadyMessage`. */
  spawn: (role: string) => ChildProcess;
  logger: Logger;
  /**
   * Called for each ready message (the API's port for the first-run banner).
   * @defaultValue none
   */
  onReady?: (msg: ReadyMessage, restarts: number) => void;
  /**
   * The wait before restarting a role that died, doubled on each death in a row.
   * @defaultValue 1000
   */
  initialDelayMs?: number;
  /**
   * The longest wait before a restart.
   * @defaultValue 30000
   */
  maxDelayMs?: number;
  /**
   * A role that ran this long before dying starts its backoff over from `initialDelayMs`.
   * @defaultValue 60000
   */
  stableAfterMs?: number;
  /**
   * How long a graceful stop may take before the remaining processes are killed (each role drains for up
   * to 30 s itself).
   * @defaultValue 35000
   */
  stopTimeoutMs?: number;
};

export type Supervisor = {
  /**
   * Resolves with null once every role reported ready, or with an exit code when a role died before its
   * first ready (a first-run error it already explained: that is not retried, the others are stopped).
   */
  started: Promise<number | null>;
  /** Forwards SIGTERM to every role, waits for them (killing what outlives `stopTimeoutMs`). */
  stop(): Promise<void>;
};

type Slot = {
  role: string;
  child: ChildProcess | null;
  everReady: boolean;
  /** Deaths in a row without a stable run: the backoff's exponent. */
  failures: number;
  startedAt: number;
  timer: NodeJS.Timeout | null;
};

/**
 * `npm start`'s process supervisor: each role in its own process, so one that dies (an uncaught error
 * exits it, by design) takes no other role with it, and is restarted after an exponential, capped backoff,
 * logged as it happens. A role that fails before its first ready (a port in use, a bad setting) is a first-run
 * error: everything stops and `npm start` exits with its code, as it did before roles had processes.
 */
export function supervise(opts: SupervisorOptions): Supervisor {
  const { logger } = opts;
  const initialDelayMs = opts.initialDelayMs ?? 1000;
  const maxDelayMs = opts.maxDelayMs ?? 30_000;
  const stableAfterMs = opts.stableAfterMs ?? 60_000;
  const stopTimeoutMs = opts.stopTimeoutMs ?? 35_000;
  const slots = opts.roles.map<Slot>((role) => ({
    role,
    child: null,
    everReady: false,
    failures: 0,
    startedAt: 0,
    timer: null,
  }));
  let stopping = false;
  let settleStarted: (code: number | null) => void = () => {};
  const started = new Promise<number | null>((resolve) => {
    settleStarted = resolve;
  });
  let restarts = 0;
  // Logged once: from then on a role that dies is restarted (before it, its death stops npm start).
  let allRunning = false;

  const launch = (slot: Slot) => {
    slot.timer = null;
    slot.startedAt = Date.now();
    const child = opts.spawn(slot.role);
    slot.child = child;
    const restarted = slot.everReady;
    child.on('message', (msg) => {
      if (!isReadyMessage(msg)) return;
      if (restarted) logger.info({ role: slot.role, pid: child.pid }, `${slot.role} restarted and running`);
      slot.everReady = true;
      opts.onReady?.(msg, restarts);
      if (!allRunning && slots.every((s) => s.everReady)) {
        allRunning = true;
        logger.info({ roles: opts.roles }, 'every role running');
        settleStarted(null);
      }
    });
    child.on('exit', (code, signal) => {
      if (slot.child === child) slot.child = null;
      if (stopping) return;
      if (!slot.everReady) {
        // It explained itself (port in use, settings, services down): stop the rest, exit with its code.
        settleStarted(code || 1);
        return;
      }
      if (Date.now() - slot.startedAt >= stableAfterMs) slot.failures = 0;
      const delayMs = Math.min(maxDelayMs, initialDelayMs * 2 ** slot.failures);
      slot.failures += 1;
      restarts += 1;
      logger.error(
        { role: slot.role, pid: child.pid, code, signal, restartInMs: delayMs, deathsInARow: slot.failures },
        `${slot.role} exited; restarting it in ${delayMs} ms`,
      );
      slot.timer = setTimeout(() => launch(slot), delayMs);
    });
    logger.info({ role: slot.role, pid: child.pid }, `${slot.role} process started`);
  };

  for (const slot of slots) launch(slot);

  const stop = async () => {
    if (stopping) return;
    stopping = true;
    settleStarted(null);
    const running: Promise<unknown>[] = [];
    for (const slot of slots) {
      if (slot.timer) clearTimeout(slot.timer);
      const child = slot.child;
      if (!child || child.exitCode !== null || child.signalCode !== null) continue;
      running.push(new Promise((resolve) => child.once('exit', resolve)));
      child.kill('SIGTERM');
    }
    let force: NodeJS.Timeout | undefined;
    const timedOut = new Promise<void>((resolve) => {
      force = setTimeout(() => {
        for (const slot of slots) slot.child?.kill('SIGKILL');
        logger.error({ stopTimeoutMs }, 'roles did not stop in time; killed');
        resolve();
      }, stopTimeoutMs);
    });
    await Promise.race([Promise.all(running), timedOut]);
    clearTimeout(force);
  };

  return { started, stop };
}
