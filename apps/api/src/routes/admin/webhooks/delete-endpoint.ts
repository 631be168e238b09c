import { createRoute } from '@hono/zod-openapi';
import { deleteEndpoint } from '@stampcard/core';
import type { App } from '../../../env';
import { okResponse, operatorErrorResponses } from '../../../lib/schemas';
import { DeletedEndpoint } from './responses';
import { endpointIdParam } from './schemas';

const route = createRoute({
  method: 'delete',
  path: '/admin/v1/webhook-endpoints/{id}',
  summary: 'Delete an endpoint with its messages and their attempts',
  tags: ['Operator: webhooks'],
  request: { params: endpointIdParam },
  responses: { ...okResponse('`{ id, deleted: true }`', DeletedEndpoint), ...operatorErrorResponses },
});

export const registerDeleteEndpoint = (app: App) =>
  app.openapi(route, async (c) => c.json(await deleteEndpoint(c.get('ctx'), c.req.valid('param').id), 200));
