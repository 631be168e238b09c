import { createRoute, z } from '@hono/zod-openapi';
import { replayMessage } from '@stampcard/core';
import type { App } from '../../../env';
import { okResponse, operatorErrorResponses } from '../../../lib/schemas';
import { WebhookMessage } from './responses';
import { queueDeliveries } from './schemas';

const route = createRoute({
  method: 'post',
  operationId: 'adminReplayMessage',
  path: '/admin/v1/webhook-messages/{id}/replay',
  summary: 'Deliver one message again, same id, fresh retry schedule',
  tags: ['Operator: webhooks'],
  request: { params: z.object({ id: z.string().min(1).max(64) }) },
  responses: { ...okResponse('The message', WebhookMessage), ...operatorErrorResponses },
});

export const registerReplayMessage = (app: App) =>
  app.openapi(route, async (c) => {
    const { message, scheduled } = await replayMessage(c.get('ctx'), c.req.valid('param').id);
    await queueDeliveries(c, [scheduled]);
    return c.json(message, 200);
  });
