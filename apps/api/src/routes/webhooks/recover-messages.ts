import { z } from '@hono/zod-openapi';
import { replayMessages } from '@stampcard/core';
import type { App } from '../../env';
import { createBodyRoute } from '../../lib/body';
import { jsonBody, okResponse } from '../../lib/schemas';
import { ReplayAnswer } from './responses';
import { endpointIdParam, queueDeliveries } from './schemas';
import type { WebhookSurface } from './surface';

const RecoverBody = z
  .strictObject({
    since: z.number().int().min(0).max(8_640_000_000_000_000).openapi({
      description: 'Deliver again every FAILED message made at or after this time (UTC ms)',
    }),
  })
  .openapi('RecoverMessages');

const route = (s: WebhookSurface) =>
  createBodyRoute({
    method: 'post',
    operationId: s.operationId({ admin: 'adminRecoverMessages', public: 'recoverWebhookMessages' }),
    path: `${s.prefix}/webhook-endpoints/{id}/recover`,
    summary: 'Deliver again every message that failed since a time (after a receiver outage)',
    description:
      'The replay of `status: FAILED, since`: each once, on a fresh schedule, with its own `webhook-id`. At most 10,000 per call (`more` says when to call again).',
    tags: s.tags,
    request: { params: endpointIdParam, body: jsonBody(RecoverBody) },
    responses: { ...okResponse('`{ replayed, more, endpointEnabled }`', ReplayAnswer), ...s.errors() },
  });

export const registerRecoverMessages = (app: App, s: WebhookSurface) =>
  app.openapi(route(s), async (c) => {
    const { scheduled, ...answer } = await replayMessages(
      c.get('ctx'),
      c.req.valid('param').id,
      { status: 'FAILED', since: c.req.valid('json').since },
      s.scopeOf(c),
    );
    if (answer.endpointEnabled) await queueDeliveries(c, scheduled);
    return c.json(answer, 200);
  });
