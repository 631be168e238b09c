import { createRoute } from '@hono/zod-openapi';
import { discardPendingMessages } from '@stampcard/core';
import type { App } from '../../../env';
import { okResponse, operatorErrorResponses } from '../../../lib/schemas';
import { DiscardAnswer } from './responses';
import { endpointIdParam } from './schemas';

const route = createRoute({
  method: 'post',
  path: '/admin/v1/webhook-endpoints/{id}/discard-pending',
  summary: 'Drop the messages an endpoint still has to deliver (e.g. kept while it was disabled)',
  tags: ['Operator: webhooks'],
  request: { params: endpointIdParam },
  responses: { ...okResponse('`{ discarded }`', DiscardAnswer), ...operatorErrorResponses },
});

export const registerDiscardPending = (app: App) =>
  app.openapi(route, async (c) =>
    c.json(await discardPendingMessages(c.get('ctx'), c.req.valid('param').id), 200),
  );
