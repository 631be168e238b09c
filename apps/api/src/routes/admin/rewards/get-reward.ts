import { createRoute, z } from '@hono/zod-openapi';
import { showReward } from '@stampcard/core';
import type { App } from '../../../env';
import { okResponse, operatorErrorResponses } from '../../../lib/schemas';
import { Reward } from '../../../lib/views';
import { idParam } from '../schemas';

const route = createRoute({
  method: 'get',
  path: '/admin/v1/campaigns/{id}/rewards/{rewardId}',
  operationId: 'adminGetReward',
  summary: 'A reward of a campaign, whole',
  tags: ['Operator: campaigns'],
  request: { params: z.object({ id: idParam, rewardId: idParam }) },
  responses: { ...okResponse('The whole Reward', Reward), ...operatorErrorResponses },
});

export const registerGetReward = (app: App) =>
  app.openapi(route, async (c) => {
    const { id, rewardId } = c.req.valid('param');
    return c.json(await showReward(c.get('ctx'), id, rewardId), 200);
  });
