import { createRoute, z } from '@hono/zod-openapi';
import { showAccount } from '@stampcard/core';
import type { App } from '../../../env';
import { okResponse, operatorErrorResponses } from '../../../lib/schemas';
import { Account } from '../responses';
import { idParam } from '../schemas';

const route = createRoute({
  method: 'get',
  path: '/admin/v1/accounts/{accountId}',
  operationId: 'adminGetAccount',
  summary: 'An account, with its participant count now',
  tags: ['Operator: accounts'],
  request: { params: z.object({ accountId: idParam }) },
  responses: { ...okResponse('The account', Account), ...operatorErrorResponses },
});

export const registerGetAccount = (app: App) =>
  app.openapi(route, async (c) =>
    c.json(await showAccount(c.get('ctx'), c.req.valid('param').accountId), 200),
  );
