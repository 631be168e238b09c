import { type CampaignStatus, campaigns } from '@stampcard/db';
import { type Ctx, unitOfWork } from '../../../context';
import { newCampaignId } from '../../../ids';
import type { CampaignRow } from '../../../serialize';
import { serializeCampaignForOperator } from '../../../serialize';
import { assertRewardInCampaign, requireAccount } from '../lookup';

export type CampaignInput = {
  name: string;
  currencyISO?: string;
  status?: CampaignStatus;
  antiFraud?: CampaignRow['antiFraud'];
  requireRewardApproval?: boolean;
  pointsConversion?: CampaignRow['pointsConversion'];
};

export async function createCampaign(ctx: Ctx, accountId: string, input: CampaignInput) {
  await requireAccount(ctx, accountId);
  const now = ctx.clock.now();
  // One transaction: a failed pointsConversion check must not leave the campaign behind.
  return unitOfWork(ctx, async (tx) => {
    const { db } = tx;
    const [row] = await db
      .insert(campaigns)
      .values({
        id: newCampaignId(),
        accountId,
        name: input.name,
        currencyISO: (input.currencyISO ?? 'USD').toUpperCase(),
        status: input.status ?? 'DRAFT',
        antiFraud: input.antiFraud ?? null,
        requireRewardApproval: input.requireRewardApproval ?? false,
        pointsConversion: input.pointsConversion ?? null,
        createdAt: now,
        updatedAt: now,
      })
      .returning();
    if (input.pointsConversion)
      await assertRewardInCampaign(tx, row!.id, input.pointsConversion.rewardId, 'pointsConversion.rewardId');
    return serializeCampaignForOperator(row!, []);
  });
}
