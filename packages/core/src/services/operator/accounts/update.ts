import { accounts } from '@stampcard/db';
import { eq } from 'drizzle-orm';
import { type Ctx, commitWrite } from '../../../context';
import { notFound } from '../../../errors';
import { serializeAccount } from './serialize';

/** What the operator changes of an account after it is made (plan, quota and limits are set at creation). */
export type AccountPatch = {
  name?: string;
  /** Replaces the list: origins checked by `frameAncestorProblem`, at most `MAX_FRAME_ANCESTORS`. */
  frameAncestors?: string[];
};

/** Changes an account's name or the origins that may frame its portal; 404 when there is no such account. */
export async function updateAccount(ctx: Ctx, accountId: string, patch: AccountPatch) {
  const [row] = await commitWrite(ctx, (w) =>
    w.db
      .update(accounts)
      .set({
        ...(patch.name === undefined ? {} : { name: patch.name }),
        ...(patch.frameAncestors === undefined ? {} : { frameAncestors: [...new Set(patch.frameAncestors)] }),
      })
      .where(eq(accounts.id, accountId))
      .returning(),
  );
  if (!row) throw notFound(`Account ${accountId}`);
  return serializeAccount(row);
}

/** The origins that may frame an account's portal (none when the account is gone). */
export async function frameAncestorsOf(ctx: Ctx, accountId: string): Promise<string[]> {
  const [row] = await ctx.db
    .select({ frameAncestors: accounts.frameAncestors })
    .from(accounts)
    .where(eq(accounts.id, accountId));
  return row?.frameAncestors ?? [];
}
