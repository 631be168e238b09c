import { z } from '@hono/zod-openapi';
import { createEndpoint } from '@stampcard/core';
import type { App } from '../../env';
import { createBodyRoute } from '../../lib/body';
import { jsonBody, okSecretResponse } from '../../lib/schemas';
import { withholdSecrets } from '../../middleware/idempotency';
import { WebhookEndpointWithSecret } from './responses';
import { EndpointBody } from './schemas';
import type { WebhookSurface } from './surface';

const route = (s: WebhookSurface) =>
  createBodyRoute({
    method: 'post',
    operationId: s.operationId({ admin: 'adminCreateEndpoint', public: 'createWebhookEndpoint' }),
    path: `${s.campaignPath}/webhook-endpoints`,
    summary: 'Register a webhook endpoint; the answer carries its secret (whsec_…), shown this once',
    tags: s.tags,
    request: { params: z.object({ id: z.string().min(1).max(64) }), body: jsonBody(EndpointBody) },
    responses: {
      ...okSecretResponse('The endpoint with its `secret`', WebhookEndpointWithSecret),
      ...s.errors(),
    },
  });

export const registerCreateEndpoint = (app: App, s: WebhookSurface) =>
  app.openapi(route(s), async (c) => {
    const { allowPrivateNetworks } = c.get('deps');
    const { id } = c.req.valid('param');
    await s.checkCampaign(c, id);
    withholdSecrets(c, ['secret']);
    const endpoint = await createEndpoint(
      c.get('ctx'),
      id,
      c.req.valid('json'),
      { allowPrivateNetworks },
      s.scopeOf(c),
    );
    return c.json(endpoint, 200);
  });
