import { utimes, writeFile } from 'node:fs/promises';
import type { Stack } from './stack';

/**
 * For container healthchecks of processes that serve no HTTP (worker, dispatcher): while each of them that
 * this process runs is running and its Redis connection is ready, `file` is touched every `everyMs`; a healthcheck fails once it is older than a
 * few periods. Returns a function that stops it.
 */
export function startHeartbeat(stack: Stack, file: string, everyMs = 5000): () => void {
  const beat = async () => {
    const running = [stack.worker, stack.dispatcher].filter((p) => p !== null);
    const alive =
      running.length > 0 &&
      running.every((p) => p.isRunning()) &&
      stack.queues.consumer.redis.status === 'ready';
    if (!alive) return;
    const now = new Date();
    await utimes(file, now, now).catch(() => writeFile(file, ''));
  };
  void beat();
  const timer = setInterval(() => void beat().catch(() => {}), everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
