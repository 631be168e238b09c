import { rewards } from '@stampcard/db';
import { and, eq } from 'drizzle-orm';
import { type Ctx, unitOfWork } from '../../../context';
import { notFound } from '../../../errors';
import { serializeReward } from '../../../serialize';
import { checkRewardShape, type RewardInput } from './shape';

export async function updateReward(ctx: Ctx, campaignId: string, rewardId: string, input: RewardInput) {
  return unitOfWork(ctx, async ({ db }) => {
    const [current] = await db
      .select()
      .from(rewards)
      .where(and(eq(rewards.id, rewardId), eq(rewards.campaignId, campaignId)))
      .for('update');
    if (!current) throw notFound(`Reward ${rewardId}`);
    checkRewardShape({ ...current, ...input });
    const [row] = await db.update(rewards).set(input).where(eq(rewards.id, rewardId)).returning();
    return serializeReward(row!);
  });
}
