import { z } from '@hono/zod-openapi';
import { createCampaign } from '@stampcard/core';
import type { App } from '../../../env';
import { createBodyRoute } from '../../../lib/body';
import { jsonBody, okResponse, operatorErrorResponses } from '../../../lib/schemas';
import { OperatorCampaign } from '../responses';
import { CampaignBody } from '../schemas';

const route = createBodyRoute({
  method: 'post',
  operationId: 'adminCreateCampaign',
  path: '/admin/v1/accounts/{accountId}/campaigns',
  summary: 'Create a campaign (status DRAFT and currency USD unless given)',
  tags: ['Operator: campaigns'],
  request: { params: z.object({ accountId: z.string().min(1).max(64) }), body: jsonBody(CampaignBody) },
  responses: { ...okResponse('The campaign with its settings', OperatorCampaign), ...operatorErrorResponses },
});

export const registerCreateCampaign = (app: App) =>
  app.openapi(route, async (c) =>
    c.json(await createCampaign(c.get('ctx'), c.req.valid('param').accountId, c.req.valid('json')), 200),
  );
