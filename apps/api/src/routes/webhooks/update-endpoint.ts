import { updateEndpoint } from '@stampcard/core';
import type { App } from '../../env';
import { createBodyRoute } from '../../lib/body';
import { jsonBody, okResponse } from '../../lib/schemas';
import { UpdatedWebhookEndpoint } from './responses';
import { EndpointPatch, endpointIdParam, handOffBacklog } from './schemas';
import type { WebhookSurface } from './surface';

const route = (s: WebhookSurface) =>
  createBodyRoute({
    method: 'patch',
    operationId: s.operationId({ admin: 'adminUpdateEndpoint', public: 'updateWebhookEndpoint' }),
    path: `${s.prefix}/webhook-endpoints/{id}`,
    summary: 'Change an endpoint; enabling a disabled one delivers the messages it kept meanwhile',
    description:
      'Enabling answers at once with `released`, the number of kept messages it releases: the first batch (`WEBHOOK_BACKLOG_BATCH`, 1,000) is due at once, the others are released in batches in the background, and `backlog` on the endpoint shows the progress until `DONE`. Disabling it during a release ends the release (`CANCELLED`): what is left stays held. Enabling it while a discard runs answers 409 `OPERATION_IN_PROGRESS`.',
    tags: s.tags,
    request: { params: endpointIdParam, body: jsonBody(EndpointPatch) },
    responses: {
      ...okResponse(
        'The endpoint, and `released`: how many kept messages are now due',
        UpdatedWebhookEndpoint,
      ),
      ...s.errors(['OPERATION_IN_PROGRESS']),
    },
  });

export const registerUpdateEndpoint = (app: App, s: WebhookSurface) =>
  app.openapi(route(s), async (c) => {
    const { allowPrivateNetworks, webhookBacklogBatch } = c.get('deps');
    const { id } = c.req.valid('param');
    const { endpoint, released, ...handOff } = await updateEndpoint(
      c.get('ctx'),
      id,
      c.req.valid('json'),
      { allowPrivateNetworks, backlogBatch: webhookBacklogBatch },
      s.scopeOf(c),
    );
    await handOffBacklog(c, id, handOff);
    return c.json({ ...endpoint, released }, 200);
  });
