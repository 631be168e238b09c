import { createRoute, z } from '@hono/zod-openapi';
import { listUsers } from '@stampcard/core';
import type { App } from '../../../env';
import { okResponse, operatorErrorResponses } from '../../../lib/schemas';
import { UserPage } from '../responses';
import { idParam, UserListQuery } from '../schemas';

const route = createRoute({
  method: 'get',
  path: '/admin/v1/accounts/{accountId}/users',
  operationId: 'adminListUsers',
  summary: "An account's team members, by id",
  description:
    'Page with `nextId` while `more` is true; `limit` 1..100 (20) is the most a page holds: it holds fewer when it reaches its byte budget of 1 MiB. Filters: `role`, `email`.',
  tags: ['Operator: accounts'],
  request: { params: z.object({ accountId: idParam }), query: UserListQuery },
  responses: { ...okResponse('`{ users, limit, nextId, more }`', UserPage), ...operatorErrorResponses },
});

export const registerListUsers = (app: App) =>
  app.openapi(route, async (c) =>
    c.json(await listUsers(c.get('ctx'), c.req.valid('param').accountId, c.req.valid('query')), 200),
  );
