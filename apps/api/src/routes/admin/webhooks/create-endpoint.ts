import { z } from '@hono/zod-openapi';
import { createEndpoint } from '@stampcard/core';
import type { App } from '../../../env';
import { createBodyRoute } from '../../../lib/body';
import { jsonBody, okResponse, operatorErrorResponses } from '../../../lib/schemas';
import { WebhookEndpointWithSecret } from './responses';
import { EndpointBody } from './schemas';

const route = createBodyRoute({
  method: 'post',
  path: '/admin/v1/campaigns/{id}/webhook-endpoints',
  summary: 'Register a webhook endpoint; the answer carries its secret (whsec_…), shown this once',
  tags: ['Operator: webhooks'],
  request: { params: z.object({ id: z.string().min(1).max(64) }), body: jsonBody(EndpointBody) },
  responses: {
    ...okResponse('The endpoint with its `secret`', WebhookEndpointWithSecret),
    ...operatorErrorResponses,
  },
});

export const registerCreateEndpoint = (app: App) =>
  app.openapi(route, async (c) => {
    const { allowPrivateNetworks } = c.get('deps');
    const endpoint = await createEndpoint(c.get('ctx'), c.req.valid('param').id, c.req.valid('json'), {
      allowPrivateNetworks,
    });
    return c.json(endpoint, 200);
  });
