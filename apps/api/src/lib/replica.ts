import { type Ctx, DomainError, pgError } from '@stampcard/core';
import type { Context } from 'hono';
import type { AppEnv } from '../env';

/**
 * Runs a read that tolerates lag on the read replica while one is in use (`Deps.replica`: within its lag bound
 * and answering), else on the primary. Lag may delay what a page shows, never refuse what the caller saw a
 * moment ago: a 404 from the replica (a row, a cursor or a campaign it has not replayed yet) is read again from
 * the primary, and so is a read whose replica connection failed (no answer from PostgreSQL at all).
 */
export async function readLagging<T>(c: Context<AppEnv>, read: (ctx: Ctx) => Promise<T>): Promise<T> {
  const ctx = c.get('ctx');
  const replica = c.get('deps').replica?.current();
  if (!replica) return read(ctx);
  try {
    return await read({ ...ctx, db: replica });
  } catch (err) {
    const behind = err instanceof DomainError && err.code === 'NOT_FOUND';
    const unanswered = !(err instanceof DomainError) && pgError(err) === undefined;
    if ((behind || unanswered) && !ctx.signal?.aborted) return read(ctx);
    throw err;
  }
}
