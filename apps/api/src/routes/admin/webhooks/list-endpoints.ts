import { createRoute, z } from '@hono/zod-openapi';
import { listEndpoints } from '@stampcard/core';
import type { App } from '../../../env';
import { okResponse, operatorErrorResponses } from '../../../lib/schemas';
import { WebhookEndpointList } from './responses';

const route = createRoute({
  method: 'get',
  operationId: 'adminListEndpoints',
  path: '/admin/v1/campaigns/{id}/webhook-endpoints',
  summary: "A campaign's webhook endpoints (without secrets)",
  tags: ['Operator: webhooks'],
  request: { params: z.object({ id: z.string().min(1).max(64) }) },
  responses: { ...okResponse('`{ endpoints }`', WebhookEndpointList), ...operatorErrorResponses },
});

export const registerListEndpoints = (app: App) =>
  app.openapi(route, async (c) => c.json(await listEndpoints(c.get('ctx'), c.req.valid('param').id), 200));
