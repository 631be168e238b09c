import { createRoute } from '@hono/zod-openapi';
import { listMessages } from '@stampcard/core';
import type { App } from '../../env';
import { okResponse } from '../../lib/schemas';
import { WebhookMessagePage } from './responses';
import { endpointIdParam, MessageQuery } from './schemas';
import type { WebhookSurface } from './surface';

const route = (s: WebhookSurface) =>
  createRoute({
    method: 'get',
    operationId: s.operationId({ admin: 'adminListMessages', public: 'listWebhookMessages' }),
    path: `${s.prefix}/webhook-endpoints/{id}/messages`,
    summary: "An endpoint's messages, newest first, each with its first and last attempts and their count",
    description:
      'Filters: `status` (PENDING, SUCCEEDED, FAILED, DISCARDED), `eventType`, `since`/`until` (UTC ms). Paged by `after`.',
    tags: s.tags,
    request: { params: endpointIdParam, query: MessageQuery },
    responses: {
      ...okResponse('`{ messages, more, nextAfter }`', WebhookMessagePage),
      ...s.errors(),
    },
  });

export const registerListMessages = (app: App, s: WebhookSurface) =>
  app.openapi(route(s), async (c) =>
    c.json(
      await listMessages(c.get('ctx'), c.req.valid('param').id, c.req.valid('query'), s.scopeOf(c)),
      200,
    ),
  );
