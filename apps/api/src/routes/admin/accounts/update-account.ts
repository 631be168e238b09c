import { z } from '@hono/zod-openapi';
import { updateAccount } from '@stampcard/core';
import type { App } from '../../../env';
import { createBodyRoute } from '../../../lib/body';
import { jsonBody, okResponse, operatorErrorResponses } from '../../../lib/schemas';
import { Account } from '../responses';
import { AccountPatch, idParam } from '../schemas';

const route = createBodyRoute({
  method: 'patch',
  operationId: 'adminUpdateAccount',
  path: '/admin/v1/accounts/{accountId}',
  summary: 'Rename an account, or set the origins that may frame its portal',
  description:
    '`frameAncestors` replaces the list: each an origin such as `https://app.example.com` (https, lower case, no path; `http://localhost` for development). Plan, quota and rate limits are set when the account is made.',
  tags: ['Operator: accounts'],
  request: { params: z.object({ accountId: idParam }), body: jsonBody(AccountPatch) },
  responses: { ...okResponse('The account', Account), ...operatorErrorResponses },
});

export const registerUpdateAccount = (app: App) =>
  app.openapi(route, async (c) =>
    c.json(await updateAccount(c.get('ctx'), c.req.valid('param').accountId, c.req.valid('json')), 200),
  );
