import { createRoute } from '@hono/zod-openapi';
import { getEndpoint } from '@stampcard/core';
import type { App } from '../../../env';
import { okResponse, operatorErrorResponses } from '../../../lib/schemas';
import { WebhookEndpoint } from './responses';
import { endpointIdParam } from './schemas';

const route = createRoute({
  method: 'get',
  operationId: 'adminGetEndpoint',
  path: '/admin/v1/webhook-endpoints/{id}',
  summary: 'A webhook endpoint: its settings, and why it is disabled if it is',
  tags: ['Operator: webhooks'],
  request: { params: endpointIdParam },
  responses: { ...okResponse('The endpoint', WebhookEndpoint), ...operatorErrorResponses },
});

export const registerGetEndpoint = (app: App) =>
  app.openapi(route, async (c) => c.json(await getEndpoint(c.get('ctx'), c.req.valid('param').id), 200));
