import { createRoute, z } from '@hono/zod-openapi';
import { listCampaignsForOperator } from '@stampcard/core';
import type { App } from '../../../env';
import { okResponse, operatorErrorResponses } from '../../../lib/schemas';
import { OperatorCampaignPage } from '../responses';
import { CampaignListQuery, idParam } from '../schemas';

const route = createRoute({
  method: 'get',
  path: '/admin/v1/accounts/{accountId}/campaigns',
  operationId: 'adminListCampaigns',
  summary: "An account's campaigns with their settings and whole rewards, by id (DELETED ones too)",
  description:
    'Page with `nextId` while `more` is true; `limit` 1..100 (20) is the most a page holds: it holds fewer when it reaches its byte budget of 1 MiB (a campaign counts with its rewards). Filter: `status`.',
  tags: ['Operator: campaigns'],
  request: { params: z.object({ accountId: idParam }), query: CampaignListQuery },
  responses: {
    ...okResponse('`{ campaigns, limit, nextId, more }`', OperatorCampaignPage),
    ...operatorErrorResponses,
  },
});

export const registerListCampaigns = (app: App) =>
  app.openapi(route, async (c) =>
    c.json(
      await listCampaignsForOperator(c.get('ctx'), c.req.valid('param').accountId, c.req.valid('query')),
      200,
    ),
  );
