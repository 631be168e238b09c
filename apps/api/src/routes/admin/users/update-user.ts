import { z } from '@hono/zod-openapi';
import { updateUser } from '@stampcard/core';
import type { App } from '../../../env';
import { createBodyRoute } from '../../../lib/body';
import { jsonBody, okResponse, operatorErrorResponses } from '../../../lib/schemas';
import { User } from '../responses';
import { idParam, UserPatch } from '../schemas';

const route = createBodyRoute({
  method: 'patch',
  path: '/admin/v1/users/{userId}',
  operationId: 'adminUpdateUser',
  summary: "Change a team member's role or campaign access; its API keys follow at once",
  description:
    "`campaignIds` replaces a MEMBER's list; each must be a campaign of the user's account (400 naming the others). The user's keys reach what the change allows from the next request on, in every API process.",
  tags: ['Operator: accounts'],
  request: { params: z.object({ userId: idParam }), body: jsonBody(UserPatch) },
  responses: { ...okResponse('The user', User), ...operatorErrorResponses },
});

export const registerUpdateUser = (app: App) =>
  app.openapi(route, async (c) =>
    c.json(await updateUser(c.get('ctx'), c.req.valid('param').userId, c.req.valid('json')), 200),
  );
