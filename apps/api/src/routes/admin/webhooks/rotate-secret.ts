import { rotateSecret } from '@stampcard/core';
import type { App } from '../../../env';
import { createBodyRoute } from '../../../lib/body';
import { jsonBody, okSecretResponse, operatorErrorResponses } from '../../../lib/schemas';
import { withholdSecrets } from '../../../middleware/idempotency';
import { WebhookEndpointWithSecret } from './responses';
import { endpointIdParam, RotateBody } from './schemas';

const route = createBodyRoute({
  method: 'post',
  operationId: 'adminRotateSecret',
  path: '/admin/v1/webhook-endpoints/{id}/rotate-secret',
  summary: 'A new signing secret, shown once; the old one keeps signing beside it for `overlapMs` (24 h)',
  tags: ['Operator: webhooks'],
  request: { params: endpointIdParam, body: jsonBody(RotateBody) },
  responses: {
    ...okSecretResponse('The endpoint with its new `secret`', WebhookEndpointWithSecret),
    ...operatorErrorResponses,
  },
});

export const registerRotateSecret = (app: App) =>
  app.openapi(route, async (c) => {
    withholdSecrets(c, ['secret']);
    return c.json(
      await rotateSecret(c.get('ctx'), c.req.valid('param').id, c.req.valid('json').overlapMs),
      200,
    );
  });
