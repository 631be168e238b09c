import { createRoute } from '@hono/zod-openapi';
import { listAccounts } from '@stampcard/core';
import type { App } from '../../../env';
import { ANY_ROUTE, errorResponsesFor } from '../../../lib/error-schema';
import { okResponse } from '../../../lib/schemas';
import { AccountPage } from '../responses';
import { AccountListQuery } from '../schemas';

const route = createRoute({
  method: 'get',
  path: '/admin/v1/accounts',
  operationId: 'adminListAccounts',
  summary: 'Every account, by id',
  description:
    'Page with `nextId` (the `nextId` of the previous page: the id of the first account of the next one) while `more` is true; `limit` 1..100 (20) is the most a page holds. Paging sees each account once while others are made. Filter: `plan`.',
  tags: ['Operator: accounts'],
  request: { query: AccountListQuery },
  responses: {
    ...okResponse('`{ accounts, limit, nextId, more }`', AccountPage),
    ...errorResponsesFor(ANY_ROUTE),
  },
});

export const registerListAccounts = (app: App) =>
  app.openapi(route, async (c) => c.json(await listAccounts(c.get('ctx'), c.req.valid('query')), 200));
