import { createRoute, z } from '@hono/zod-openapi';
import { getAction, loadCampaignFor } from '@stampcard/core';
import type { App } from '../../../env';
import { campaignIdParam, errorResponses, okResponse } from '../../../lib/schemas';
import { LoyaltyAction } from '../../../lib/views';

const route = createRoute({
  method: 'get',
  operationId: 'getLoyaltyAction',
  path: '/v1/campaign/{id}/loyalty-action/{actionId}',
  summary: "A loyalty action's state",
  description:
    '`status` is `QUEUED`, `APPLIED` or `REJECTED` (with `reason`); `unlockedRewards` lists the rewards it unlocked.',
  tags: ['Loyalty actions'],
  request: { params: z.object({ id: campaignIdParam, actionId: z.string().min(1).max(64) }) },
  responses: { ...okResponse('The action', LoyaltyAction), ...errorResponses },
});

export const registerGetLoyaltyAction = (app: App) =>
  app.openapi(route, async (c) => {
    const ctx = c.get('ctx');
    const { id, actionId } = c.req.valid('param');
    const campaign = await loadCampaignFor(ctx, c.get('principal'), id);
    return c.json(await getAction(ctx, campaign.id, actionId), 200);
  });
