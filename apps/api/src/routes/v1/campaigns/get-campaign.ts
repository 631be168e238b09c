import { createRoute, z } from '@hono/zod-openapi';
import { loadCampaignFor, showCampaign } from '@stampcard/core';
import type { App } from '../../../env';
import { campaignIdParam, errorResponses, okResponse } from '../../../lib/schemas';
import { Campaign } from '../../../lib/views';

const route = createRoute({
  method: 'get',
  operationId: 'getCampaign',
  path: '/v1/campaign/{id}',
  summary: 'Get one program',
  tags: ['Campaigns'],
  request: { params: z.object({ id: campaignIdParam }) },
  responses: { ...okResponse('The Campaign object', Campaign), ...errorResponses },
});

export const registerGetCampaign = (app: App) =>
  app.openapi(route, async (c) => {
    const ctx = c.get('ctx');
    const campaign = await loadCampaignFor(ctx, c.get('principal'), c.req.valid('param').id, { fresh: true });
    return c.json(await showCampaign(ctx, campaign), 200);
  });
