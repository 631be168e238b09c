import type { Logger } from '@stampcard/config';
import type { AppliedSignal } from '@stampcard/core';
import { appliedChannel, duplicateRedis, type RedisClient } from '@stampcard/jobs';

/**
 * `?wait=true` without polling: the worker publishes the ids of every batch it commits, and a request
 * waiting for one of them is woken at once. One subscription per API process; waiters are kept only while
 * they wait.
 */
export async function appliedSignal(redis: RedisClient, prefix: string, logger: Logger) {
  const waiting = new Map<string, Set<() => void>>();
  const sub = duplicateRedis(redis, { enableOfflineQueue: true, maxRetriesPerRequest: null });
  sub.on('error', (err) => logger.warn({ err }, 'applied-actions subscription error'));
  sub.on('message', (_channel: string, ids: string) => {
    if (waiting.size === 0) return;
    for (const id of ids.split(',')) {
      const wakers = waiting.get(id);
      if (!wakers) continue;
      waiting.delete(id);
      for (const wake of wakers) wake();
    }
  });
  await sub.subscribe(appliedChannel(prefix));
  const signal: AppliedSignal = (actionId, ms) =>
    new Promise<void>((resolve) => {
      const wakers = waiting.get(actionId) ?? new Set();
      const wake = () => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        wakers.delete(wake);
        if (wakers.size === 0 && waiting.get(actionId) === wakers) waiting.delete(actionId);
        resolve();
      }, ms);
      wakers.add(wake);
      waiting.set(actionId, wakers);
    });
  return { signal, close: () => sub.disconnect() };
}
