import { createAccount } from '@stampcard/core';
import type { App } from '../../../env';
import { createBodyRoute } from '../../../lib/body';
import { jsonBody, okResponse, operatorErrorResponses } from '../../../lib/schemas';
import { Account } from '../responses';
import { AccountBody } from '../schemas';

const route = createBodyRoute({
  method: 'post',
  operationId: 'adminCreateAccount',
  path: '/admin/v1/accounts',
  summary: 'Create an account (a business)',
  tags: ['Operator: accounts'],
  request: { body: jsonBody(AccountBody) },
  responses: { ...okResponse('The account', Account), ...operatorErrorResponses },
});

export const registerCreateAccount = (app: App) =>
  app.openapi(route, async (c) => c.json(await createAccount(c.get('ctx'), c.req.valid('json')), 200));
