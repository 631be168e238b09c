import { type CommitState, commitOutcomeUnknown, DomainError } from '@stampcard/core';
import type { Context, MiddlewareHandler } from 'hono';
import type { AppEnv } from '../env';
import { errorResponse, isUnavailable } from '../errors';

/** A request's time budget in ms: `Deps.requestTimeoutMs`, plus `maxWaitMs` for `?wait=true`. */
export function requestBudgetMs(c: Context<AppEnv>): number {
  const deps = c.get('deps');
  return (deps.requestTimeoutMs ?? 5000) + (c.req.query('wait') === 'true' ? (deps.maxWaitMs ?? 10_000) : 0);
}

/**
 * How long past the budget a write already sent is waited for: a database that answers at all answers a
 * statement within its statement timeout; the margin covers the round trip and the event loop.
 */
export const COMMIT_MARGIN_MS = 1000;

/** Longest the deadline waits for the outcome of a COMMIT in flight, in ms. */
export function commitWaitMs(c: Context<AppEnv>): number {
  return (c.get('deps').statementTimeoutMs ?? 3000) + COMMIT_MARGIN_MS;
}

/** A request's deadline on the shared clock: `expire` is called once `performance.now()` passes `at`. */
type Watched = { at: number; expire: (outcome: 'expired') => void };

/**
 * How often the shared clock looks at the deadlines, in ms: a request's 503 comes at most this late. One clock
 * for every request in flight, not a timer, its closure and a promise to race of each request's own
 * (BENCHMARKS.md, "Deadlines on one clock").
 */
export const DEADLINE_TICK_MS = 10;

const watching = new Set<Watched>();
let clock: NodeJS.Timeout | undefined;

function watch(w: Watched): void {
  watching.add(w);
  // Runs while requests are in flight, and stops on the first tick that finds none.
  clock ??= setInterval(tick, DEADLINE_TICK_MS).unref();
}

function unwatch(w: Watched): void {
  watching.delete(w);
}

function tick(): void {
  if (watching.size === 0) {
    clearInterval(clock);
    clock = undefined;
    return;
  }
  const now = performance.now();
  for (const w of watching) {
    if (w.at > now) continue;
    watching.delete(w);
    w.expire('expired');
  }
}

const noop = () => {};

/** How many requests the shared clock watches, and whether it runs: both 0/false once nothing is in flight. */
export function deadlineClock(): { watching: number; running: boolean } {
  return { watching: watching.size, running: clock !== undefined };
}

const RECORDED_NO_ANSWER =
  'The change was recorded, but its answer could not be completed in time: look it up rather than repeating the request';

/**
 * Every request has a time budget (`Deps.requestTimeoutMs`, plus `maxWaitMs` for `?wait=true`). When it runs
 * out, typically because PostgreSQL stopped answering on open connections, what the request's write did
 * decides the answer (core keeps that in `ctx.commit`):
 * - nothing sent: the request's signal is aborted, so no write is sent from then on (`assertLive`,
 *   `unitOfWork`, a group commit drops it unsent), and the caller gets 503 UNAVAILABLE "nothing was
 *   written", which is then true;
 * - a write that may commit is in flight: its outcome is waited for, at most the statement timeout plus
 *   `COMMIT_MARGIN_MS`; committed, the route's answer (`lateReply`, or the work's own answer); refused by
 *   the database, the 503 above; no answer in that time, or the connection lost after COMMIT was sent, a
 *   503 with `outcome: "UNKNOWN"` that says so and names what to look up (`actionId`);
 * - committed already: the route's `lateReply`; a route without one that is still not done once the outcome
 *   wait is over gets a 503 with `outcome: "LANDED"` and what names the write (`actionId`, `messageId`): the
 *   change was recorded, so the caller looks it up rather than repeating it.
 * Work that ends after its answer (an abandoned request) is logged once, when it ends (see `observe`).
 */
export const requestDeadline: MiddlewareHandler<AppEnv> = async (c, next) => {
  let budget = requestBudgetMs(c);
  // Read by the work (`assertLive`, a group commit) as it goes; set once the budget is spent.
  const liveness = { aborted: false };
  const commit: CommitState = { sent: 0 };
  const watched: Watched = { at: performance.now() + budget, expire: noop };
  // A request held back on purpose (the write slowdown) gets that time on top of its budget.
  c.set('extendDeadline', (ms: number) => {
    watched.at += ms;
    budget += ms;
  });
  const ctx = c.get('ctx');
  ctx.signal = liveness;
  ctx.commit = commit;
  let done = false;
  const work = next().then(() => {
    done = true;
    return 'done' as const;
  });
  let outcome: 'done' | 'expired';
  try {
    outcome = await new Promise<'done' | 'expired'>((resolve, reject) => {
      watched.expire = resolve;
      watch(watched);
      work.then(resolve, reject);
    });
  } finally {
    unwatch(watched);
  }
  if (outcome === 'done') return undefined;

  // A write out (COMMIT sent, or committed with the route's answer still to come): "nothing was written" may
  // be false. Wait for its outcome, then for the route's answer, each bounded.
  if (!c.get('lateReply') && commit.sent > 0) {
    await waitFor(work, commitWaitMs(c), commit);
    // The route's own continuation (which sets `lateReply`) runs before this turn ends: let it.
    if (!done) await new Promise((resolve) => setImmediate(resolve));
  }
  if (!done && !c.get('lateReply') && commit.sent === 0 && commit.outcome === 'LANDED') {
    await waitFor(work, commitWaitMs(c));
  }
  if (done) return undefined;

  liveness.aborted = true;
  c.set('abandoned', true);
  const late = c.get('lateReply');
  let answer: Response;
  if (late) answer = late();
  else if (commit.outcome === 'LANDED') {
    answer = errorResponse(c, 'UNAVAILABLE', RECORDED_NO_ANSWER, { outcome: 'LANDED', ...commit.subject });
  } else if (commit.sent > 0 || commit.outcome === 'UNKNOWN') {
    const unknown = commitOutcomeUnknown(commit.subject);
    answer = errorResponse(c, 'UNAVAILABLE', unknown.message, unknown.details);
  } else {
    answer = errorResponse(
      c,
      'UNAVAILABLE',
      `No answer from a backing store within ${budget} ms: nothing was written, retry later`,
    );
  }
  observe(c, work, commit, answer.status, budget, commit.outcome === 'LANDED');
  return answer;
};

/** Resolves when the work ends, `ms` pass, or (given `commit`) no write of it is in flight any more. */
async function waitFor(work: Promise<unknown>, ms: number, commit?: CommitState): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      work,
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, ms);
        if (commit) {
          commit.onSettled = () => {
            if (commit.sent === 0) resolve();
          };
        }
      }),
    ]);
  } finally {
    clearTimeout(timer);
    if (commit) commit.onSettled = undefined;
  }
}

/**
 * The work of a request answered without it goes on until its statement returns (then stops before any
 * write) or its write answers. Its end is logged here, once: the error the route ended with (class and code,
 * never values: see the logger's serializer) and what its write did. `handleError` stays silent for it.
 */
function observe(
  c: Context<AppEnv>,
  work: Promise<unknown>,
  commit: CommitState,
  status: number,
  budget: number,
  /** The answer already said the write landed (`lateReply`, or the 503 with `outcome: "LANDED"`). */
  toldLanded: boolean,
) {
  const { logger } = c.get('deps');
  const requestId = c.get('requestId');
  const answeredAt = performance.now();
  const end = (err: unknown) => {
    const line = {
      requestId,
      budgetMs: budget,
      answered: status,
      afterAnswerMs: Math.round(performance.now() - answeredAt),
      write: commit.outcome ?? (commit.sent > 0 ? 'IN_FLIGHT' : 'NONE'),
      ...(commit.subject ?? {}),
      err,
    };
    if (commit.outcome === 'LANDED' && status >= 500 && !toldLanded) {
      logger.warn(
        line,
        'a write committed after its request was answered with a 503 that said its outcome was unknown',
      );
    } else if (
      err === undefined ||
      isUnavailable(err) ||
      (err instanceof DomainError && err.code !== 'INTERNAL_ERROR')
    ) {
      logger.info(line, 'abandoned request ended after its answer');
    } else {
      logger.error(line, 'abandoned request failed after its answer');
    }
  };
  work.then(
    () => end(c.error),
    (err) => end(err),
  );
}
