import { loyaltyActions, participantRewards } from '@stampcard/db';
import { and, asc, eq, inArray } from 'drizzle-orm';
import type { Ctx } from '../../context';
import { notFound } from '../../errors';
import { serializeAction } from '../../serialize';

export async function getAction(ctx: Ctx, campaignId: string, actionId: string) {
  const [action] = await ctx.db
    .select()
    .from(loyaltyActions)
    .where(and(eq(loyaltyActions.id, actionId), eq(loyaltyActions.campaignId, campaignId)))
    .limit(1);
  if (!action) throw notFound(`Loyalty action ${actionId}`);
  const unlocked =
    action.unlockedRewardIds.length > 0
      ? await ctx.db
          .select()
          .from(participantRewards)
          .where(inArray(participantRewards.id, action.unlockedRewardIds))
          .orderBy(asc(participantRewards.createdAt))
      : [];
  return serializeAction(action, unlocked);
}

/** Polls the ledger until the action leaves QUEUED or `timeoutMs` passes; answers its state either way. */
export async function waitForAction(ctx: Ctx, campaignId: string, actionId: string, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  let delay = 10;
  for (;;) {
    const state = await getAction(ctx, campaignId, actionId);
    if (state.status !== 'QUEUED' || Date.now() >= deadline || ctx.signal?.aborted) return state;
    await new Promise((r) => setTimeout(r, Math.min(delay, Math.max(0, deadline - Date.now()))));
    delay = Math.min(delay * 2, 100);
  }
}
