import { createRoute } from '@hono/zod-openapi';
import { discardPendingMessages } from '@stampcard/core';
import type { App } from '../../env';
import { okResponse } from '../../lib/schemas';
import { DiscardAnswer } from './responses';
import { endpointIdParam, handOffBacklog } from './schemas';
import type { WebhookSurface } from './surface';

const route = (s: WebhookSurface) =>
  createRoute({
    method: 'post',
    operationId: s.operationId({ admin: 'adminDiscardPending', public: 'discardPendingWebhookMessages' }),
    path: `${s.prefix}/webhook-endpoints/{id}/discard-pending`,
    summary: 'Drop the messages an endpoint still has to deliver (e.g. kept while it was disabled)',
    description:
      'Answers at once with `discarded`, the number of pending messages made until now: the first batch (`WEBHOOK_BACKLOG_BATCH`, 1,000) is discarded at once, the others in batches in the background, and `backlog` (here and on the endpoint) shows the progress until `DONE`. While a release or another discard of the endpoint runs, it answers 409 `OPERATION_IN_PROGRESS`.',
    tags: s.tags,
    request: { params: endpointIdParam },
    responses: {
      ...okResponse('`{ discarded, backlog }`', DiscardAnswer),
      ...s.errors(['OPERATION_IN_PROGRESS']),
    },
  });

export const registerDiscardPending = (app: App, s: WebhookSurface) =>
  app.openapi(route(s), async (c) => {
    const { id } = c.req.valid('param');
    const { answer, ...handOff } = await discardPendingMessages(
      c.get('ctx'),
      id,
      { backlogBatch: c.get('deps').webhookBacklogBatch },
      s.scopeOf(c),
    );
    await handOffBacklog(c, id, handOff);
    return c.json(answer, 200);
  });
