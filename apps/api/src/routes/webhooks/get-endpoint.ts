import { createRoute } from '@hono/zod-openapi';
import { getEndpoint } from '@stampcard/core';
import type { App } from '../../env';
import { okResponse } from '../../lib/schemas';
import { WebhookEndpoint } from './responses';
import { endpointIdParam } from './schemas';
import type { WebhookSurface } from './surface';

const route = (s: WebhookSurface) =>
  createRoute({
    method: 'get',
    operationId: s.operationId({ admin: 'adminGetEndpoint', public: 'getWebhookEndpoint' }),
    path: `${s.prefix}/webhook-endpoints/{id}`,
    summary: 'A webhook endpoint: its settings, and why it is disabled if it is',
    tags: s.tags,
    request: { params: endpointIdParam },
    responses: { ...okResponse('The endpoint', WebhookEndpoint), ...s.errors() },
  });

export const registerGetEndpoint = (app: App, s: WebhookSurface) =>
  app.openapi(route(s), async (c) =>
    c.json(await getEndpoint(c.get('ctx'), c.req.valid('param').id, s.scopeOf(c)), 200),
  );
