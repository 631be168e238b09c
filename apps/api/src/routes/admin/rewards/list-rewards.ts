import { createRoute, z } from '@hono/zod-openapi';
import { listRewards } from '@stampcard/core';
import type { App } from '../../../env';
import { okResponse, operatorErrorResponses } from '../../../lib/schemas';
import { RewardPage } from '../responses';
import { idParam, PageQuery } from '../schemas';

const route = createRoute({
  method: 'get',
  path: '/admin/v1/campaigns/{id}/rewards',
  operationId: 'adminListRewards',
  summary: "A campaign's rewards, whole, by id",
  description:
    'Page with `nextId` while `more` is true; `limit` 1..100 (20) is the most a page holds: it holds fewer when it reaches its byte budget of 1 MiB. Any campaign status.',
  tags: ['Operator: campaigns'],
  request: { params: z.object({ id: idParam }), query: PageQuery },
  responses: { ...okResponse('`{ rewards, limit, nextId, more }`', RewardPage), ...operatorErrorResponses },
});

export const registerListRewards = (app: App) =>
  app.openapi(route, async (c) =>
    c.json(await listRewards(c.get('ctx'), c.req.valid('param').id, c.req.valid('query')), 200),
  );
