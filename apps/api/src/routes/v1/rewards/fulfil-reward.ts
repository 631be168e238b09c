import { createRoute } from '@hono/zod-openapi';
import { fulfilCampaignReward, loadCampaignFor } from '@stampcard/core';
import type { App } from '../../../env';
import { okResponse } from '../../../lib/schemas';
import { ParticipantReward } from '../../../lib/views';
import { rewardChangeErrors, rewardParams } from './shared';

const route = createRoute({
  method: 'post',
  operationId: 'fulfilReward',
  path: '/v1/campaign/{id}/reward/{participantRewardId}/fulfill',
  summary: 'Fulfil an approved reward',
  description:
    'The reward becomes `FULFILLED` (`isFulfilled`, `fulfilledAt`) and `PARTICIPANT_REWARD_FULFILLED` is sent, once: a reward not approved yet, or already fulfilled (by this call or by a FULFILMENT endpoint), is a 400 `INVALID_STATE`. No body.',
  tags: ['Participants'],
  request: { params: rewardParams },
  responses: { ...okResponse('The ParticipantReward, fulfilled', ParticipantReward), ...rewardChangeErrors },
});

export const registerFulfilReward = (app: App) =>
  app.openapi(route, async (c) => {
    const ctx = c.get('ctx');
    const { id, participantRewardId } = c.req.valid('param');
    const campaign = await loadCampaignFor(ctx, c.get('principal'), id);
    const change = await fulfilCampaignReward(ctx, campaign, participantRewardId);
    c.set('lateReply', () => c.json(change.participantReward, 200));
    return c.json(change.participantReward, 200);
  });
