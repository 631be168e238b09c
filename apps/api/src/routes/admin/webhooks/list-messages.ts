import { createRoute } from '@hono/zod-openapi';
import { listMessages } from '@stampcard/core';
import type { App } from '../../../env';
import { errorResponses, okResponse } from '../../../lib/schemas';
import { endpointIdParam, MessageQuery } from './schemas';

const route = createRoute({
  method: 'get',
  path: '/admin/v1/webhook-endpoints/{id}/messages',
  summary: "An endpoint's messages, newest first, each with every attempt",
  description:
    'Filters: `status` (PENDING, SUCCEEDED, FAILED, DISCARDED), `eventType`, `since`/`until` (UTC ms). Paged by `after`.',
  tags: ['Webhooks'],
  request: { params: endpointIdParam, query: MessageQuery },
  responses: { ...okResponse('`{ messages, more, nextAfter }`'), ...errorResponses },
});

export const registerListMessages = (app: App) =>
  app.openapi(route, async (c) =>
    c.json(await listMessages(c.get('ctx'), c.req.valid('param').id, c.req.valid('query')), 200),
  );
