import { createRoute, z } from '@hono/zod-openapi';
import { showApiKey } from '@stampcard/core';
import type { App } from '../../../env';
import { okResponse, operatorErrorResponses } from '../../../lib/schemas';
import { ApiKey } from '../responses';
import { idParam } from '../schemas';

const route = createRoute({
  method: 'get',
  path: '/admin/v1/api-keys/{keyId}',
  operationId: 'adminGetApiKey',
  summary: 'An API key: its user, prefix, and whether it is revoked (never the key)',
  tags: ['Operator: accounts'],
  request: { params: z.object({ keyId: idParam }) },
  responses: { ...okResponse('The key, without the key', ApiKey), ...operatorErrorResponses },
});

export const registerGetApiKey = (app: App) =>
  app.openapi(route, async (c) => c.json(await showApiKey(c.get('ctx'), c.req.valid('param').keyId), 200));
