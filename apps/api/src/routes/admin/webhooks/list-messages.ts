import { createRoute } from '@hono/zod-openapi';
import { listMessages } from '@stampcard/core';
import type { App } from '../../../env';
import { okResponse, operatorErrorResponses } from '../../../lib/schemas';
import { WebhookMessagePage } from './responses';
import { endpointIdParam, MessageQuery } from './schemas';

const route = createRoute({
  method: 'get',
  operationId: 'adminListMessages',
  path: '/admin/v1/webhook-endpoints/{id}/messages',
  summary: "An endpoint's messages, newest first, each with its first and last attempts and their count",
  description:
    'Filters: `status` (PENDING, SUCCEEDED, FAILED, DISCARDED), `eventType`, `since`/`until` (UTC ms). Paged by `after`.',
  tags: ['Operator: webhooks'],
  request: { params: endpointIdParam, query: MessageQuery },
  responses: {
    ...okResponse('`{ messages, more, nextAfter }`', WebhookMessagePage),
    ...operatorErrorResponses,
  },
});

export const registerListMessages = (app: App) =>
  app.openapi(route, async (c) =>
    c.json(await listMessages(c.get('ctx'), c.req.valid('param').id, c.req.valid('query')), 200),
  );
