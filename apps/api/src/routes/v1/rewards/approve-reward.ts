import { z } from '@hono/zod-openapi';
import { approveParticipantReward, loadCampaignFor } from '@stampcard/core';
import type { App } from '../../../env';
import { createBodyRoute } from '../../../lib/body';
import { jsonBody, okResponse } from '../../../lib/schemas';
import { ParticipantReward } from '../../../lib/views';
import { rewardChangeErrors, rewardParams } from './shared';

const Body = z
  .strictObject({
    fulfill: z.boolean().optional().openapi({ description: 'true: fulfil it too, in the same change' }),
  })
  .openapi('ApproveParticipantReward');

const route = createBodyRoute({
  method: 'post',
  operationId: 'approveReward',
  path: '/v1/campaign/{id}/reward/{participantRewardId}/approve',
  summary: 'Approve a reward waiting for manual approval',
  description:
    'The reward becomes approved (`approvedAt`), the participant a winner, and `PARTICIPANT_REACHED_A_GOAL` is sent (so FULFILMENT endpoints receive it). With `fulfill: true` it is also FULFILLED (`PARTICIPANT_REWARD_FULFILLED`). The body may be left out. A reward already approved: 400 `INVALID_STATE`.',
  tags: ['Participants'],
  request: { params: rewardParams, body: jsonBody(Body) },
  responses: { ...okResponse('The ParticipantReward, approved', ParticipantReward), ...rewardChangeErrors },
});

export const registerApproveReward = (app: App) =>
  app.openapi(route, async (c) => {
    const ctx = c.get('ctx');
    const { id, participantRewardId } = c.req.valid('param');
    const campaign = await loadCampaignFor(ctx, c.get('principal'), id);
    const change = await approveParticipantReward(ctx, campaign, participantRewardId, c.req.valid('json'));
    c.set('lateReply', () => c.json(change.participantReward, 200));
    return c.json(change.participantReward, 200);
  });
