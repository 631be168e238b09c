import { createRoute } from '@hono/zod-openapi';
import { loadCampaignFor, requireParticipant, showParticipant } from '@stampcard/core';
import type { App } from '../../../env';
import { errorResponses, okResponse } from '../../../lib/schemas';
import { Participant } from '../../../lib/views';
import { participantParams } from './schemas';

const route = createRoute({
  method: 'get',
  operationId: 'getParticipant',
  path: '/v1/campaign/{id}/participant/{idOrEmail}',
  summary: 'Get a participant by email or by id',
  description: 'A path segment that contains `@` is an email; anything else is a participant id.',
  tags: ['Participants'],
  request: {
    params: participantParams,
  },
  responses: { ...okResponse('The Participant object', Participant), ...errorResponses },
});

export const registerGetParticipant = (app: App) =>
  app.openapi(route, async (c) => {
    const ctx = c.get('ctx');
    const { id, idOrEmail } = c.req.valid('param');
    const campaign = await loadCampaignFor(ctx, c.get('principal'), id);
    const participant = await requireParticipant(ctx, campaign.id, idOrEmail);
    return c.json(await showParticipant(ctx, participant), 200);
  });
