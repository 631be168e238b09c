import { rotateSecret } from '@stampcard/core';
import type { App } from '../../env';
import { createBodyRoute } from '../../lib/body';
import { jsonBody, okSecretResponse } from '../../lib/schemas';
import { withholdSecrets } from '../../middleware/idempotency';
import { WebhookEndpointWithSecret } from './responses';
import { endpointIdParam, RotateBody } from './schemas';
import type { WebhookSurface } from './surface';

const route = (s: WebhookSurface) =>
  createBodyRoute({
    method: 'post',
    operationId: s.operationId({ admin: 'adminRotateSecret', public: 'rotateWebhookSecret' }),
    path: `${s.prefix}/webhook-endpoints/{id}/rotate-secret`,
    summary: 'A new signing secret, shown once; the old one keeps signing beside it for `overlapMs` (24 h)',
    tags: s.tags,
    request: { params: endpointIdParam, body: jsonBody(RotateBody) },
    responses: {
      ...okSecretResponse('The endpoint with its new `secret`', WebhookEndpointWithSecret),
      ...s.errors(),
    },
  });

export const registerRotateSecret = (app: App, s: WebhookSurface) =>
  app.openapi(route(s), async (c) => {
    withholdSecrets(c, ['secret']);
    return c.json(
      await rotateSecret(c.get('ctx'), c.req.valid('param').id, c.req.valid('json').overlapMs, s.scopeOf(c)),
      200,
    );
  });
