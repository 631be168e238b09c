import { createRoute, z } from '@hono/zod-openapi';
import { getMessage } from '@stampcard/core';
import type { App } from '../../../env';
import { okResponse, operatorErrorResponses } from '../../../lib/schemas';
import { WebhookMessage } from './responses';

const route = createRoute({
  method: 'get',
  operationId: 'adminGetMessage',
  path: '/admin/v1/webhook-messages/{id}',
  summary:
    'A webhook message with its first and last attempts (time, status, latency, answer excerpt, error class) and their count',
  tags: ['Operator: webhooks'],
  request: { params: z.object({ id: z.string().min(1).max(64) }) },
  responses: { ...okResponse('The message', WebhookMessage), ...operatorErrorResponses },
});

export const registerGetMessage = (app: App) =>
  app.openapi(route, async (c) => c.json(await getMessage(c.get('ctx'), c.req.valid('param').id), 200));
