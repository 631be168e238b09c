import { createRoute } from '@hono/zod-openapi';
import { deleteEndpoint } from '@stampcard/core';
import type { App } from '../../env';
import { okResponse } from '../../lib/schemas';
import { DeletedEndpoint } from './responses';
import { endpointIdParam, handOffBacklog } from './schemas';
import type { WebhookSurface } from './surface';

const route = (s: WebhookSurface) =>
  createRoute({
    method: 'delete',
    operationId: s.operationId({ admin: 'adminDeleteEndpoint', public: 'deleteWebhookEndpoint' }),
    path: `${s.prefix}/webhook-endpoints/{id}`,
    summary: 'Delete an endpoint with its messages and their attempts',
    description:
      'The endpoint is gone at once: every route answers 404 for it and its messages, it is left out of lists, and it receives and delivers nothing more. Its messages and their attempts are deleted in batches (`WEBHOOK_BACKLOG_BATCH`, 1,000; the first before the answer, the others in the background), then the endpoint itself. Deleting is allowed whatever the endpoint is doing, and ends a release or discard still running.',
    tags: s.tags,
    request: { params: endpointIdParam },
    responses: { ...okResponse('`{ id, deleted: true }`', DeletedEndpoint), ...s.errors() },
  });

export const registerDeleteEndpoint = (app: App, s: WebhookSurface) =>
  app.openapi(route(s), async (c) => {
    const { id } = c.req.valid('param');
    const { answer, next } = await deleteEndpoint(
      c.get('ctx'),
      id,
      { backlogBatch: c.get('deps').webhookBacklogBatch },
      s.scopeOf(c),
    );
    await handOffBacklog(c, id, { scheduled: [], next });
    return c.json(answer, 200);
  });
