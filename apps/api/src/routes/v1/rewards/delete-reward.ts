import { createRoute } from '@hono/zod-openapi';
import { loadCampaignFor, removeParticipantReward } from '@stampcard/core';
import type { App } from '../../../env';
import { okResponse } from '../../../lib/schemas';
import { RemovedParticipantReward } from '../responses';
import { rewardChangeErrors, rewardParams } from './shared';

const route = createRoute({
  method: 'delete',
  operationId: 'deleteReward',
  path: '/v1/campaign/{id}/reward/{participantRewardId}',
  summary: 'Remove an earned reward that is not approved yet',
  description:
    "The reward is gone, and no longer counts against the reward's limits; `PARTICIPANT_REWARD_DELETED` is sent (ids only). An approved reward cannot be removed: 400 `INVALID_STATE`.",
  tags: ['Participants'],
  request: { params: rewardParams },
  responses: { ...okResponse('`{ success: true }`', RemovedParticipantReward), ...rewardChangeErrors },
});

export const registerDeleteReward = (app: App) =>
  app.openapi(route, async (c) => {
    const ctx = c.get('ctx');
    const { id, participantRewardId } = c.req.valid('param');
    const campaign = await loadCampaignFor(ctx, c.get('principal'), id);
    const removed = await removeParticipantReward(ctx, campaign, participantRewardId);
    c.set('lateReply', () => c.json(removed, 200));
    return c.json(removed, 200);
  });
