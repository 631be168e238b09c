import { z } from '@hono/zod-openapi';
import { createReward } from '@stampcard/core';
import type { App } from '../../../env';
import { createBodyRoute } from '../../../lib/body';
import { errorResponsesFor, OPERATOR_ERRORS } from '../../../lib/error-schema';
import { jsonBody, okResponse } from '../../../lib/schemas';
import { Reward } from '../../../lib/views';
import { RewardBody } from '../schemas';

const route = createBodyRoute({
  method: 'post',
  operationId: 'adminCreateReward',
  path: '/admin/v1/campaigns/{id}/rewards',
  summary: 'Add a reward to a campaign (every Reward field)',
  tags: ['Operator: campaigns'],
  request: { params: z.object({ id: z.string().min(1).max(64) }), body: jsonBody(RewardBody) },
  responses: {
    ...okResponse('The whole Reward', Reward),
    ...errorResponsesFor([...OPERATOR_ERRORS, 'INVALID_STATE']),
  },
});

export const registerCreateReward = (app: App) =>
  app.openapi(route, async (c) =>
    c.json(await createReward(c.get('ctx'), c.req.valid('param').id, c.req.valid('json')), 200),
  );
