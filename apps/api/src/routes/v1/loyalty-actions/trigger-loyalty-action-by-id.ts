import { z } from '@hono/zod-openapi';
import type { App } from '../../../env';
import { createBodyRoute } from '../../../lib/body';
import { campaignIdParam, jsonBody, metadataSchema, okResponse } from '../../../lib/schemas';
import { TriggerAnswer } from '../responses';
import { triggerAction, triggerErrors, waitQuery } from './shared';

const Body = z
  .strictObject({ rewardId: z.string().min(1).max(64), metadata: metadataSchema.optional() })
  .openapi('TriggerLoyaltyActionById');

const route = createBodyRoute({
  method: 'post',
  operationId: 'triggerLoyaltyActionById',
  path: '/v1/campaign/{id}/participant/{participantId}/loyalty-action',
  summary: 'Trigger a loyalty action by participant id',
  tags: ['Loyalty actions'],
  request: {
    params: z.object({ id: campaignIdParam, participantId: z.string().min(1).max(64) }),
    query: waitQuery,
    body: jsonBody(Body),
  },
  responses: { ...okResponse('`{ success, message, action }`', TriggerAnswer), ...triggerErrors.byId },
});

export const registerTriggerLoyaltyActionById = (app: App) =>
  app.openapi(route, async (c) => {
    const body = c.req.valid('json');
    const { id, participantId } = c.req.valid('param');
    return triggerAction(
      c,
      id,
      body,
      { rewardId: body.rewardId, metadata: body.metadata, participant: { id: participantId } },
      c.req.valid('query').wait === 'true',
    );
  });
