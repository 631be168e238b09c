import { z } from '@hono/zod-openapi';
import { createUser } from '@stampcard/core';
import type { App } from '../../../env';
import { createBodyRoute } from '../../../lib/body';
import { jsonBody, okResponse, operatorErrorResponses } from '../../../lib/schemas';
import { User } from '../responses';
import { UserBody } from '../schemas';

const route = createBodyRoute({
  method: 'post',
  operationId: 'adminCreateUser',
  path: '/admin/v1/accounts/{accountId}/users',
  summary: 'Add a team member (ADMIN, or MEMBER with API access to listed campaigns)',
  tags: ['Operator: accounts'],
  request: { params: z.object({ accountId: z.string().min(1).max(64) }), body: jsonBody(UserBody) },
  responses: { ...okResponse('The user', User), ...operatorErrorResponses },
});

export const registerCreateUser = (app: App) =>
  app.openapi(route, async (c) =>
    c.json(await createUser(c.get('ctx'), c.req.valid('param').accountId, c.req.valid('json')), 200),
  );
