import { createRoute } from '@hono/zod-openapi';
import { revokePreviousSecret } from '@stampcard/core';
import type { App } from '../../env';
import { okResponse } from '../../lib/schemas';
import { WebhookEndpoint } from './responses';
import { endpointIdParam } from './schemas';
import type { WebhookSurface } from './surface';

const route = (s: WebhookSurface) =>
  createRoute({
    method: 'delete',
    operationId: s.operationId({ admin: 'adminRevokePreviousSecret', public: 'revokePreviousWebhookSecret' }),
    path: `${s.prefix}/webhook-endpoints/{id}/previous-secret`,
    summary: "End a rotation's overlap now: only the new secret signs from here on",
    tags: s.tags,
    request: { params: endpointIdParam },
    responses: { ...okResponse('The endpoint', WebhookEndpoint), ...s.errors() },
  });

export const registerRevokePreviousSecret = (app: App, s: WebhookSurface) =>
  app.openapi(route(s), async (c) =>
    c.json(await revokePreviousSecret(c.get('ctx'), c.req.valid('param').id, s.scopeOf(c)), 200),
  );
