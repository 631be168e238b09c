import { createRoute } from '@hono/zod-openapi';
import { createTestMessage } from '@stampcard/core';
import type { App } from '../../../env';
import { okResponse, operatorErrorResponses } from '../../../lib/schemas';
import { TestMessageAnswer } from './responses';
import { endpointIdParam, queueDeliveries } from './schemas';

const route = createRoute({
  method: 'post',
  operationId: 'adminSendTest',
  path: '/admin/v1/webhook-endpoints/{id}/test',
  summary: 'Send a signed WEBHOOK_TEST message to this endpoint only; follow it in its messages',
  tags: ['Operator: webhooks'],
  request: { params: endpointIdParam },
  responses: {
    ...okResponse('`{ messageId, endpointEnabled }`', TestMessageAnswer),
    ...operatorErrorResponses,
  },
});

export const registerSendTest = (app: App) =>
  app.openapi(route, async (c) => {
    const { messageId, generation, endpointEnabled } = await createTestMessage(
      c.get('ctx'),
      c.req.valid('param').id,
    );
    if (endpointEnabled) await queueDeliveries(c, [{ messageId, generation }]);
    return c.json({ messageId, endpointEnabled }, 200);
  });
