import { createRoute, z } from '@hono/zod-openapi';
import { listEndpoints } from '@stampcard/core';
import type { App } from '../../env';
import { okResponse } from '../../lib/schemas';
import { WebhookEndpointList } from './responses';
import type { WebhookSurface } from './surface';

const route = (s: WebhookSurface) =>
  createRoute({
    method: 'get',
    operationId: s.operationId({ admin: 'adminListEndpoints', public: 'listWebhookEndpoints' }),
    path: `${s.campaignPath}/webhook-endpoints`,
    summary: "A campaign's webhook endpoints (without secrets)",
    tags: s.tags,
    request: { params: z.object({ id: z.string().min(1).max(64) }) },
    responses: { ...okResponse('`{ endpoints }`', WebhookEndpointList), ...s.errors() },
  });

export const registerListEndpoints = (app: App, s: WebhookSurface) =>
  app.openapi(route(s), async (c) => {
    const { id } = c.req.valid('param');
    await s.checkCampaign(c, id);
    return c.json(await listEndpoints(c.get('ctx'), id, s.scopeOf(c)), 200);
  });
