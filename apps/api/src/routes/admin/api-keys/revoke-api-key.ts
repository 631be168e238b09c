import { createRoute, z } from '@hono/zod-openapi';
import { revokeApiKey } from '@stampcard/core';
import type { App } from '../../../env';
import { okResponse, operatorErrorResponses } from '../../../lib/schemas';
import { RevokedApiKey } from '../responses';

const route = createRoute({
  method: 'delete',
  operationId: 'adminRevokeApiKey',
  path: '/admin/v1/api-keys/{keyId}',
  summary: 'Revoke an API key (requests with it get 403 from now on)',
  tags: ['Operator: accounts'],
  request: { params: z.object({ keyId: z.string().min(1).max(64) }) },
  responses: { ...okResponse('`{ id, revoked: true }`', RevokedApiKey), ...operatorErrorResponses },
});

export const registerRevokeApiKey = (app: App) =>
  app.openapi(route, async (c) => c.json(await revokeApiKey(c.get('ctx'), c.req.valid('param').keyId), 200));
