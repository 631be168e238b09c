import { createRoute } from '@hono/zod-openapi';
import { listCampaigns } from '@stampcard/core';
import type { App } from '../../../env';
import { errorResponses, okResponse } from '../../../lib/schemas';
import { CampaignList } from '../responses';

const route = createRoute({
  method: 'get',
  operationId: 'listCampaigns',
  path: '/v1/campaigns',
  summary: 'List the programs of the account (deleted ones are left out)',
  tags: ['Campaigns'],
  responses: { ...okResponse('`{ campaigns: Campaign[] }`', CampaignList), ...errorResponses },
});

export const registerListCampaigns = (app: App) =>
  app.openapi(route, async (c) => {
    return c.json({ campaigns: await listCampaigns(c.get('ctx'), c.get('principal')) }, 200);
  });
