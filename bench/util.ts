import { performance } from 'node:perf_hooks';

const started = performance.now();

/** Seconds since the bench started. */
export const elapsedS = () => (performance.now() - started) / 1000;

/** One progress line: how long the run has taken so far, and what it is doing. */
export function progress(message: string): void {
  console.log(`[bench ${elapsedS().toFixed(1).padStart(6)} s] ${message}`);
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Polls `check` every `everyMs` until it answers true. Throws after `timeoutMs`, naming `what` and, when
 * `state` is given, what was last seen.
 */
export async function until(
  what: string,
  timeoutMs: number,
  check: () => boolean | Promise<boolean>,
  opts: { everyMs?: number; state?: () => string } = {},
): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (performance.now() > deadline) {
      const seen = opts.state ? ` (last seen: ${opts.state()})` : '';
      throw new Error(`timed out after ${Math.round(timeoutMs / 1000)} s waiting for ${what}${seen}`);
    }
    await sleep(opts.everyMs ?? 50);
  }
}

/** Rejects with a message naming `what` when `promise` has not settled within `ms`. */
export async function within<T>(what: string, ms: number, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`${what} took longer than ${Math.round(ms / 1000)} s`)),
          ms,
        );
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** The p-th percentile (nearest rank) of an ascending list; null when empty. */
export function percentile(sorted: number[], p: number): number | null {
  if (sorted.length === 0) return null;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}

export const round = (n: number, digits = 0) => Number(n.toFixed(digits));

/** `n` split into `parts` integers as equal as possible, the larger first. */
export function split(n: number, parts: number): number[] {
  return Array.from({ length: parts }, (_, i) => Math.floor(n / parts) + (i < n % parts ? 1 : 0));
}

/** Runs `work`, printing `label: N s` every 10 s while it lasts. */
export async function withHeartbeat<T>(label: string, work: () => Promise<T>): Promise<T> {
  const t0 = performance.now();
  const timer = setInterval(
    () => progress(`${label}: ${Math.round((performance.now() - t0) / 1000)} s`),
    10_000,
  );
  try {
    return await work();
  } finally {
    clearInterval(timer);
  }
}
