import { unavailable } from '@stampcard/core';
import type { Context, MiddlewareHandler } from 'hono';
import type { AppEnv } from '../env';

/** A request's time budget in ms: `Deps.requestTimeoutMs`, plus `maxWaitMs` for `?wait=true`. */
export function requestBudgetMs(c: Context<AppEnv>): number {
  const deps = c.get('deps');
  return (deps.requestTimeoutMs ?? 5000) + (c.req.query('wait') === 'true' ? (deps.maxWaitMs ?? 10_000) : 0);
}

/**
 * Every request has a time budget (`Deps.requestTimeoutMs`, plus `maxWaitMs` for `?wait=true`). When it
 * runs out, typically because PostgreSQL stopped answering on open connections, the caller gets 503
 * UNAVAILABLE at once, and the request's context signal is aborted: the domain layer checks it before each
 * write (`assertLive`, `unitOfWork`), so a statement that was only waiting does not land afterwards. A
 * route that already committed its write sets `lateReply`, and that answer is given instead.
 */
export const requestDeadline: MiddlewareHandler<AppEnv> = async (c, next) => {
  let budget = requestBudgetMs(c);
  const controller = new AbortController();
  c.set('ctx', { ...c.get('ctx'), signal: controller.signal });
  let deadline = performance.now() + budget;
  // A request held back on purpose (the write slowdown) gets that time on top of its budget.
  c.set('extendDeadline', (ms: number) => {
    deadline += ms;
    budget += ms;
  });
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<'expired'>((resolve) => {
    const check = () => {
      const left = deadline - performance.now();
      if (left <= 0) resolve('expired');
      else timer = setTimeout(check, left);
    };
    timer = setTimeout(check, budget);
  });
  const work = next().then(() => 'done' as const);
  const outcome = await Promise.race([work, expired]);
  clearTimeout(timer);
  if (outcome === 'done') return undefined;
  controller.abort();
  // The abandoned work ends on its own (with an error once its statement returns); nobody awaits it.
  work.catch(() => {});
  const late = c.get('lateReply');
  if (late) return late();
  throw unavailable(`No answer from a backing store within ${budget} ms: nothing was accepted, retry later`);
};
