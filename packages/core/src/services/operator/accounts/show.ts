import type { Ctx } from '../../../context';
import { requireAccount } from '../lookup';
import { serializeAccount } from './serialize';

/** One account, as its create answered it (with its participant count now); 404 when there is none. */
export async function showAccount(ctx: Ctx, accountId: string) {
  return serializeAccount(await requireAccount(ctx, accountId));
}
