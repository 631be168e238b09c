import { createRoute, z } from '@hono/zod-openapi';
import { showUser } from '@stampcard/core';
import type { App } from '../../../env';
import { okResponse, operatorErrorResponses } from '../../../lib/schemas';
import { User } from '../responses';
import { idParam } from '../schemas';

const route = createRoute({
  method: 'get',
  path: '/admin/v1/users/{userId}',
  operationId: 'adminGetUser',
  summary: 'A team member: its account, role and campaign access',
  tags: ['Operator: accounts'],
  request: { params: z.object({ userId: idParam }) },
  responses: { ...okResponse('The user', User), ...operatorErrorResponses },
});

export const registerGetUser = (app: App) =>
  app.openapi(route, async (c) => c.json(await showUser(c.get('ctx'), c.req.valid('param').userId), 200));
