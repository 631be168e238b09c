import { createRoute, z } from '@hono/zod-openapi';
import { getMessage } from '@stampcard/core';
import type { App } from '../../env';
import { okResponse } from '../../lib/schemas';
import { WebhookMessage } from './responses';
import type { WebhookSurface } from './surface';

const route = (s: WebhookSurface) =>
  createRoute({
    method: 'get',
    operationId: s.operationId({ admin: 'adminGetMessage', public: 'getWebhookMessage' }),
    path: `${s.prefix}/webhook-messages/{id}`,
    summary:
      'A webhook message with its first and last attempts (time, status, latency, answer excerpt, error class) and their count',
    tags: s.tags,
    request: { params: z.object({ id: z.string().min(1).max(64) }) },
    responses: { ...okResponse('The message', WebhookMessage), ...s.errors() },
  });

export const registerGetMessage = (app: App, s: WebhookSurface) =>
  app.openapi(route(s), async (c) =>
    c.json(await getMessage(c.get('ctx'), c.req.valid('param').id, s.scopeOf(c)), 200),
  );
