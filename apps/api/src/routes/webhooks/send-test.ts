import { createRoute } from '@hono/zod-openapi';
import { createTestMessage } from '@stampcard/core';
import type { App } from '../../env';
import { okResponse } from '../../lib/schemas';
import { TestMessageAnswer } from './responses';
import { endpointIdParam, queueDeliveries } from './schemas';
import type { WebhookSurface } from './surface';

const route = (s: WebhookSurface) =>
  createRoute({
    method: 'post',
    operationId: s.operationId({ admin: 'adminSendTest', public: 'sendWebhookTest' }),
    path: `${s.prefix}/webhook-endpoints/{id}/test`,
    summary: 'Send a signed WEBHOOK_TEST message to this endpoint only; follow it in its messages',
    tags: s.tags,
    request: { params: endpointIdParam },
    responses: {
      ...okResponse('`{ messageId, endpointEnabled }`', TestMessageAnswer),
      ...s.errors(),
    },
  });

export const registerSendTest = (app: App, s: WebhookSurface) =>
  app.openapi(route(s), async (c) => {
    const { messageId, generation, endpointEnabled } = await createTestMessage(
      c.get('ctx'),
      c.req.valid('param').id,
      s.scopeOf(c),
    );
    if (endpointEnabled) await queueDeliveries(c, [{ messageId, generation }]);
    return c.json({ messageId, endpointEnabled }, 200);
  });
