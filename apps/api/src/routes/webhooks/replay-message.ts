import { createRoute, z } from '@hono/zod-openapi';
import { replayMessage } from '@stampcard/core';
import type { App } from '../../env';
import { okResponse } from '../../lib/schemas';
import { WebhookMessage } from './responses';
import { queueDeliveries } from './schemas';
import type { WebhookSurface } from './surface';

const route = (s: WebhookSurface) =>
  createRoute({
    method: 'post',
    operationId: s.operationId({ admin: 'adminReplayMessage', public: 'replayWebhookMessage' }),
    path: `${s.prefix}/webhook-messages/{id}/replay`,
    summary: 'Deliver one message again, same id, fresh retry schedule',
    tags: s.tags,
    request: { params: z.object({ id: z.string().min(1).max(64) }) },
    responses: { ...okResponse('The message', WebhookMessage), ...s.errors(['INVALID_STATE']) },
  });

export const registerReplayMessage = (app: App, s: WebhookSurface) =>
  app.openapi(route(s), async (c) => {
    const { message, scheduled } = await replayMessage(c.get('ctx'), c.req.valid('param').id, s.scopeOf(c));
    await queueDeliveries(c, [scheduled]);
    return c.json(message, 200);
  });
