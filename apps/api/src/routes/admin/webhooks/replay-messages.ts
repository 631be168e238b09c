import { replayMessages } from '@stampcard/core';
import type { App } from '../../../env';
import { createBodyRoute } from '../../../lib/body';
import { jsonBody, okResponse, operatorErrorResponses } from '../../../lib/schemas';
import { ReplayAnswer } from './responses';
import { endpointIdParam, queueDeliveries, ReplayBody } from './schemas';

const route = createBodyRoute({
  method: 'post',
  operationId: 'adminReplayMessages',
  path: '/admin/v1/webhook-endpoints/{id}/replay',
  summary: "Deliver again an endpoint's messages that match (default: FAILED), each once",
  description:
    'Filters: `status` (FAILED, SUCCEEDED or DISCARDED), `eventType`, `since`/`until` (UTC ms). At most 10,000 per call (`more` says when to call again).',
  tags: ['Operator: webhooks'],
  request: { params: endpointIdParam, body: jsonBody(ReplayBody) },
  responses: {
    ...okResponse('`{ replayed, more, endpointEnabled }`', ReplayAnswer),
    ...operatorErrorResponses,
  },
});

export const registerReplayMessages = (app: App) =>
  app.openapi(route, async (c) => {
    const { scheduled, ...answer } = await replayMessages(
      c.get('ctx'),
      c.req.valid('param').id,
      c.req.valid('json'),
    );
    if (answer.endpointEnabled) await queueDeliveries(c, scheduled);
    return c.json(answer, 200);
  });
