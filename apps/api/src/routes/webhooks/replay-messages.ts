import { replayMessages } from '@stampcard/core';
import type { App } from '../../env';
import { createBodyRoute } from '../../lib/body';
import { jsonBody, okResponse } from '../../lib/schemas';
import { ReplayAnswer } from './responses';
import { endpointIdParam, queueDeliveries, ReplayBody } from './schemas';
import type { WebhookSurface } from './surface';

const route = (s: WebhookSurface) =>
  createBodyRoute({
    method: 'post',
    operationId: s.operationId({ admin: 'adminReplayMessages', public: 'replayWebhookMessages' }),
    path: `${s.prefix}/webhook-endpoints/{id}/replay`,
    summary: "Deliver again an endpoint's messages that match (default: FAILED), each once",
    description:
      'Filters: `status` (FAILED, SUCCEEDED or DISCARDED), `eventType`, `since`/`until` (UTC ms). At most 10,000 per call (`more` says when to call again).',
    tags: s.tags,
    request: { params: endpointIdParam, body: jsonBody(ReplayBody) },
    responses: {
      ...okResponse('`{ replayed, more, endpointEnabled }`', ReplayAnswer),
      ...s.errors(),
    },
  });

export const registerReplayMessages = (app: App, s: WebhookSurface) =>
  app.openapi(route(s), async (c) => {
    const { scheduled, ...answer } = await replayMessages(
      c.get('ctx'),
      c.req.valid('param').id,
      c.req.valid('json'),
      s.scopeOf(c),
    );
    if (answer.endpointEnabled) await queueDeliveries(c, scheduled);
    return c.json(answer, 200);
  });
