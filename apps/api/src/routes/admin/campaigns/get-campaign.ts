import { createRoute, z } from '@hono/zod-openapi';
import { getCampaignForOperator } from '@stampcard/core';
import type { App } from '../../../env';
import { okResponse, operatorErrorResponses } from '../../../lib/schemas';
import { OperatorCampaign } from '../responses';

const route = createRoute({
  method: 'get',
  operationId: 'adminGetCampaign',
  path: '/admin/v1/campaigns/{id}',
  summary: 'A campaign with its settings and whole rewards',
  tags: ['Operator: campaigns'],
  request: { params: z.object({ id: z.string().min(1).max(64) }) },
  responses: { ...okResponse('The campaign with its settings', OperatorCampaign), ...operatorErrorResponses },
});

export const registerGetCampaignForOperator = (app: App) =>
  app.openapi(route, async (c) =>
    c.json(await getCampaignForOperator(c.get('ctx'), c.req.valid('param').id), 200),
  );
