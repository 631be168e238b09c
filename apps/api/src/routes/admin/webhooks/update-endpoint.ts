import { updateEndpoint } from '@stampcard/core';
import type { App } from '../../../env';
import { createBodyRoute } from '../../../lib/body';
import { jsonBody, okResponse, operatorErrorResponses } from '../../../lib/schemas';
import { UpdatedWebhookEndpoint } from './responses';
import { EndpointPatch, endpointIdParam, queueDeliveries } from './schemas';

const route = createBodyRoute({
  method: 'patch',
  path: '/admin/v1/webhook-endpoints/{id}',
  summary: 'Change an endpoint; enabling a disabled one delivers the messages it kept meanwhile',
  tags: ['Operator: webhooks'],
  request: { params: endpointIdParam, body: jsonBody(EndpointPatch) },
  responses: {
    ...okResponse('The endpoint, and `released`: how many kept messages are now due', UpdatedWebhookEndpoint),
    ...operatorErrorResponses,
  },
});

export const registerUpdateEndpoint = (app: App) =>
  app.openapi(route, async (c) => {
    const { allowPrivateNetworks } = c.get('deps');
    const { endpoint, released } = await updateEndpoint(
      c.get('ctx'),
      c.req.valid('param').id,
      c.req.valid('json'),
      { allowPrivateNetworks },
    );
    await queueDeliveries(c, released);
    return c.json({ ...endpoint, released: released.length }, 200);
  });
