import { rewards } from '@stampcard/db';
import { type Ctx, commitWrite } from '../../../context';
import { invalidState } from '../../../errors';
import { newId } from '../../../ids';
import { serializeReward } from '../../../serialize';
import { requireCampaign } from '../lookup';
import { checkRewardShape, type RewardInput } from './shape';

export async function createReward(ctx: Ctx, campaignId: string, input: RewardInput) {
  const campaign = await requireCampaign(ctx, campaignId);
  if (campaign.status === 'DELETED') throw invalidState('The campaign is deleted');
  checkRewardShape(input);
  const [row] = await commitWrite(ctx, (w) =>
    w.db
      .insert(rewards)
      .values({
        ...input,
        id: newId('reward'),
        accountId: campaign.accountId,
        campaignId,
        createdAt: ctx.clock.now(),
      })
      .returning(),
  );
  return serializeReward(row!);
}
