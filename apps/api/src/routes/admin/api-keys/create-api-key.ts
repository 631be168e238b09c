import { createRoute, z } from '@hono/zod-openapi';
import { createApiKey } from '@stampcard/core';
import type { App } from '../../../env';
import { okSecretResponse, operatorErrorResponses } from '../../../lib/schemas';
import { withholdSecrets } from '../../../middleware/idempotency';
import { NewApiKey } from '../responses';

const route = createRoute({
  method: 'post',
  operationId: 'adminCreateApiKey',
  path: '/admin/v1/users/{userId}/api-keys',
  summary: 'Issue an API key for a user; `key` is shown in this answer only',
  tags: ['Operator: accounts'],
  request: { params: z.object({ userId: z.string().min(1).max(64) }) },
  responses: {
    ...okSecretResponse('`{ id, key, keyPrefix, userId, createdAt }`', NewApiKey),
    ...operatorErrorResponses,
  },
});

export const registerCreateApiKey = (app: App) =>
  app.openapi(route, async (c) => {
    withholdSecrets(c, ['key']);
    return c.json(await createApiKey(c.get('ctx'), c.req.valid('param').userId), 200);
  });
