import { createRoute } from '@hono/zod-openapi';
import { listApiKeys } from '@stampcard/core';
import type { App } from '../../../env';
import { okResponse, operatorErrorResponses } from '../../../lib/schemas';
import { ApiKeyPage } from '../responses';
import { ApiKeyListQuery } from '../schemas';

const route = createRoute({
  method: 'get',
  path: '/admin/v1/api-keys',
  operationId: 'adminListApiKeys',
  summary: 'Find API keys (to revoke one): by account, user, the first characters of the key, revoked or not',
  description:
    'Never shows a key, only its `keyPrefix` (its first 9 characters, as the create answer showed them). Filters combine: `accountId`, `userId` (404 when unknown), `keyPrefix` (1 to 9 first characters), `revoked`. By id; page with `nextId` while `more` is true; `limit` 1..100 (20). Revoke what it finds with `DELETE /admin/v1/api-keys/{keyId}`.',
  tags: ['Operator: accounts'],
  request: { query: ApiKeyListQuery },
  responses: { ...okResponse('`{ apiKeys, limit, nextId, more }`', ApiKeyPage), ...operatorErrorResponses },
});

export const registerListApiKeys = (app: App) =>
  app.openapi(route, async (c) => {
    const { revoked, ...query } = c.req.valid('query');
    const page = await listApiKeys(c.get('ctx'), {
      ...query,
      revoked: revoked === undefined ? undefined : revoked === 'true',
    });
    return c.json(page, 200);
  });
