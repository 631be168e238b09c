import { consoleSignOuts } from '@stampcard/db';
import { eq, inArray, lt } from 'drizzle-orm';
import { assertLive, type Ctx } from '../../../context';

/** Expired sign-outs one sign-out deletes, at most: the table stays the size of the sessions still alive. */
const PURGE_BATCH = 100;

/**
 * Ends a console session on the server: a copy of its cookie is refused from now on (`isSignedOut`), until it
 * would have expired anyway. Sign-outs past their session's expiry are deleted on the way, a few at a time.
 */
export async function recordSignOut(ctx: Ctx, sessionId: string, expiresAt: Date): Promise<void> {
  assertLive(ctx);
  await ctx.db.insert(consoleSignOuts).values({ sessionId, expiresAt }).onConflictDoNothing();
  const expired = ctx.db
    .select({ id: consoleSignOuts.sessionId })
    .from(consoleSignOuts)
    .where(lt(consoleSignOuts.expiresAt, ctx.clock.now()))
    .limit(PURGE_BATCH);
  await ctx.db.delete(consoleSignOuts).where(inArray(consoleSignOuts.sessionId, expired));
}

/** Whether the console session was signed out (one read by primary key per console request). */
export async function isSignedOut(ctx: Ctx, sessionId: string): Promise<boolean> {
  assertLive(ctx);
  const [row] = await ctx.db
    .select({ id: consoleSignOuts.sessionId })
    .from(consoleSignOuts)
    .where(eq(consoleSignOuts.sessionId, sessionId))
    .limit(1);
  return row !== undefined;
}
