import type { Ctx } from '../../../context';
import { requireUser } from '../lookup';
import { serializeUser } from './serialize';

/** One team member, as its create answered it; 404 when there is none. */
export async function showUser(ctx: Ctx, userId: string) {
  return serializeUser(await requireUser(ctx, userId));
}
