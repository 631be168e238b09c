import { z } from '@hono/zod-openapi';
import { updateReward } from '@stampcard/core';
import type { App } from '../../../env';
import { createBodyRoute } from '../../../lib/body';
import { jsonBody, okResponse, operatorErrorResponses } from '../../../lib/schemas';
import { Reward } from '../../../lib/views';
import { RewardPatch } from '../schemas';

const route = createBodyRoute({
  method: 'patch',
  operationId: 'adminUpdateReward',
  path: '/admin/v1/campaigns/{id}/rewards/{rewardId}',
  summary: 'Change a reward',
  tags: ['Operator: campaigns'],
  request: {
    params: z.object({ id: z.string().min(1).max(64), rewardId: z.string().min(1).max(64) }),
    body: jsonBody(RewardPatch),
  },
  responses: { ...okResponse('The whole Reward', Reward), ...operatorErrorResponses },
});

export const registerUpdateReward = (app: App) =>
  app.openapi(route, async (c) => {
    const { id, rewardId } = c.req.valid('param');
    return c.json(await updateReward(c.get('ctx'), id, rewardId, c.req.valid('json')), 200);
  });
