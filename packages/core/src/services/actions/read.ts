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

/**
 * Resolves when `actionId` may have been applied (a notification), or after `ms` at the latest. Lost
 * notifications only cost time: the caller reads the ledger again either way.
 */
export type AppliedSignal = (actionId: string, ms: number) => Promise<void>;

/**
 * Reads the action until it leaves QUEUED or `timeoutMs` passes; answers its state either way. With
 * `applied`, it reads again when the worker says the action was applied (and at least every second);
 * without, it polls with a growing pause (10 ms to 100 ms).
 */
export async function waitForAction(
  ctx: Ctx,
  campaignId: string,
  actionId: string,
  timeoutMs: number,
  applied?: AppliedSignal,
) {
  const deadline = Date.now() + timeoutMs;
  let delay = 10;
  for (;;) {
    const state = await getAction(ctx, campaignId, actionId);
    if (state.status !== 'QUEUED' || Date.now() >= deadline || ctx.signal?.aborted) return state;
    const left = Math.max(0, deadline - Date.now());
    if (applied) await applied(actionId, Math.min(left, 1000));
    else await new Promise((r) => setTimeout(r, Math.min(delay, left)));
    delay = Math.min(delay * 2, 100);
  }
}
