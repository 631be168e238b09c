import { z } from '@hono/zod-openapi';
import { createEndpoint } from '@stampcard/core';
import type { App } from '../../../env';
import { createBodyRoute } from '../../../lib/body';
import { jsonBody, okSecretResponse, operatorErrorResponses } from '../../../lib/schemas';
import { withholdSecrets } from '../../../middleware/idempotency';
import { WebhookEndpointWithSecret } from './responses';
import { EndpointBody } from './schemas';

const route = createBodyRoute({
  method: 'post',
  operationId: 'adminCreateEndpoint',
  path: '/admin/v1/campaigns/{id}/webhook-endpoints',
  summary: 'Register a webhook endpoint; the answer carries its secret (whsec_…), shown this once',
  tags: ['Operator: webhooks'],
  request: { params: z.object({ id: z.string().min(1).max(64) }), body: jsonBody(EndpointBody) },
  responses: {
    ...okSecretResponse('The endpoint with its `secret`', WebhookEndpointWithSecret),
    ...operatorErrorResponses,
  },
});

export const registerCreateEndpoint = (app: App) =>
  app.openapi(route, async (c) => {
    const { allowPrivateNetworks } = c.get('deps');
    withholdSecrets(c, ['secret']);
    const endpoint = await createEndpoint(c.get('ctx'), c.req.valid('param').id, c.req.valid('json'), {
      allowPrivateNetworks,
    });
    return c.json(endpoint, 200);
  });
