import { createRoute } from '@hono/zod-openapi';
import { eventCatalog } from '@stampcard/core';
import type { App } from '../../env';
import { okResponse } from '../../lib/schemas';
import { WebhookEventTypeList } from './responses';
import type { WebhookSurface } from './surface';

const route = (s: WebhookSurface) =>
  createRoute({
    method: 'get',
    operationId: s.operationId({ admin: 'adminListWebhookEventTypes', public: 'listWebhookEventTypes' }),
    path: `${s.prefix}/webhook-event-types`,
    summary: 'Every event type a webhook carries, with what it means and an example body',
    tags: s.tags,
    responses: { ...okResponse('`{ eventTypes }`', WebhookEventTypeList), ...s.errors() },
  });

export const registerListEventTypes = (app: App, s: WebhookSurface) =>
  app.openapi(route(s), async (c) => {
    s.scopeOf(c); // refuses a caller who may not manage webhooks (a MEMBER key)
    return c.json(
      {
        eventTypes: eventCatalog() as {
          type: string;
          description: string;
          example: Record<string, unknown>;
        }[],
      },
      200,
    );
  });
