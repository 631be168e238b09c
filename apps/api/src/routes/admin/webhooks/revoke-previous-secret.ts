import { createRoute } from '@hono/zod-openapi';
import { revokePreviousSecret } from '@stampcard/core';
import type { App } from '../../../env';
import { okResponse, operatorErrorResponses } from '../../../lib/schemas';
import { WebhookEndpoint } from './responses';
import { endpointIdParam } from './schemas';

const route = createRoute({
  method: 'delete',
  operationId: 'adminRevokePreviousSecret',
  path: '/admin/v1/webhook-endpoints/{id}/previous-secret',
  summary: "End a rotation's overlap now: only the new secret signs from here on",
  tags: ['Operator: webhooks'],
  request: { params: endpointIdParam },
  responses: { ...okResponse('The endpoint', WebhookEndpoint), ...operatorErrorResponses },
});

export const registerRevokePreviousSecret = (app: App) =>
  app.openapi(route, async (c) =>
    c.json(await revokePreviousSecret(c.get('ctx'), c.req.valid('param').id), 200),
  );
