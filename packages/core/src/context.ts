import type { Tx } from '@stampcard/db';
import type { Clock } from './clock';
import { unavailable } from './errors';
import type { LookupCache } from './lookup-cache';

/**
 * What every domain operation runs with. `db` is the pool or, inside a unit of work, its transaction.
 * `signal`, when given, is aborted once the caller stopped waiting (a request past its deadline): from then
 * on the operation writes nothing. `cache`, when given, serves the per-request look-ups (API key, campaign)
 * and is told of every change to what it holds.
 */
export type Ctx = { db: Tx; clock: Clock; signal?: AbortSignal; cache?: LookupCache };

/**
 * Throws UNAVAILABLE once the caller's deadline has passed. Called before each write, so a statement that
 * waited behind a stalled store does not land after the caller was told that nothing was accepted.
 */
export function assertLive(ctx: Ctx): void {
  if (ctx.signal?.aborted) {
    throw unavailable('The request ran out of time waiting for the database: nothing was written');
  }
}

/**
 * A transaction that commits only while the caller still waits: checked before it begins and again just
 * before COMMIT (a late result rolls back instead).
 */
export async function unitOfWork<T>(ctx: Ctx, fn: (tx: Ctx) => Promise<T>): Promise<T> {
  assertLive(ctx);
  return ctx.db.transaction(async (db) => {
    const result = await fn({ ...ctx, db });
    assertLive(ctx);
    return result;
  });
}
