import { campaigns, rewards } from '@stampcard/db';
import { eq } from 'drizzle-orm';
import { type Ctx, unitOfWork } from '../../../context';
import { invalidState } from '../../../errors';
import { campaignRef, serializeCampaignForOperator } from '../../../serialize';
import { recordEvents } from '../../events';
import { assertRewardInCampaign, requireCampaign } from '../lookup';
import type { CampaignInput } from './create';

/** Changes settings or status. Leaving DELETED is refused; entering COMPLETE records CAMPAIGN_ENDED. */
export async function updateCampaign(ctx: Ctx, campaignId: string, input: Partial<CampaignInput>) {
  const updated = await unitOfWork(ctx, async (tx) => {
    const { db } = tx;
    const before = await requireCampaign(tx, campaignId, true);
    if (before.status === 'DELETED' && input.status && input.status !== 'DELETED') {
      throw invalidState('A deleted campaign cannot change status');
    }
    if (input.pointsConversion)
      await assertRewardInCampaign(
        tx,
        campaignId,
        input.pointsConversion.rewardId,
        'pointsConversion.rewardId',
      );
    const [row] = await db
      .update(campaigns)
      .set({
        ...input,
        ...(input.currencyISO ? { currencyISO: input.currencyISO.toUpperCase() } : {}),
        updatedAt: ctx.clock.now(),
      })
      .where(eq(campaigns.id, campaignId))
      .returning();
    if (input.status === 'COMPLETE' && before.status !== 'COMPLETE') {
      await recordEvents(tx, [
        {
          campaignId,
          type: 'CAMPAIGN_ENDED',
          data: { campaign: campaignRef(row!) },
        },
      ]);
    }
    const rs = await db.select().from(rewards).where(eq(rewards.campaignId, campaignId));
    return serializeCampaignForOperator(row!, rs);
  });
  await ctx.cache?.invalidate('campaign', campaignId);
  return updated;
}
